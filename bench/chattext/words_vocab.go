package chattext

import "strings"

// The vocabulary of Words (the turn benchmarks and the turn fixture).

// functionWords head the vocabulary: the most frequent words of chat text.
// Most are stopwords (memory.Terms drops them), as in real text.
var functionWords = strings.Fields(`the i to you and a it is that of in my for on have be this was so but
just with me not what do we are at if can it's i'm don't your all he she they about there out up no yes
like know get got an or from as by will would could should been were them her him his our their then
than when how why which who now here well really very too much more some any ok thanks think going
want time good one day also did maybe still back need way even`)

// contentWords are what people talk about, roughly most common first.
var contentWords = strings.Fields(`work home people week today tomorrow yesterday night morning weekend
house family friend friends kids dog cat car phone money job boss meeting project school class
dinner lunch breakfast coffee tea food pizza pasta chicken salad beer wine water movie show music
song book game team match trip holiday flight train bus city beach mountain park weather rain sun
snow cold hot summer winter spring autumn birthday party wedding gift christmas doctor hospital
appointment sick headache medicine gym run running walk bike football tennis swimming yoga
computer laptop code bug server email message video photo picture camera app website update
plan plans idea problem question answer reason story news article paper report deadline budget
price rent bill bank card account shop store market delivery order package kitchen garden room
office desk chair window door key keys bag shoes jacket shirt dress hair teeth eye back knee
sister brother mother father mom dad son daughter wife husband girlfriend boyfriend grandma
grandpa uncle aunt cousin neighbour colleague client manager teacher student baby puppy kitten
garage roof floor wall paint furniture sofa bed sleep dream tired busy happy sad angry worried
excited stressed nervous bored hungry late early fast slow cheap expensive new old big small
long short easy hard nice great awful amazing funny weird strange quiet loud clean dirty broken
fixed ready free full empty open closed finished started moved bought sold paid called sent
booked cancelled missed forgot remembered learned taught cooked baked cleaned painted watched
played read wrote drove flew visited stayed left arrived lost found won tried decided changed
finish start move buy sell pay call send book cancel miss forget remember learn teach cook bake
clean watch play read write drive fly visit stay leave arrive lose find win try decide change
help ask tell talk speak listen hear feel look see meet bring take give keep hold turn carry
price hours minutes month year years months weeks days evening afternoon monday tuesday wednesday
thursday friday saturday sunday january february march april may june july august september
october november december lisbon porto paris london berlin madrid rome tokyo york barcelona
amsterdam brussels dublin vienna prague budapest warsaw athens istanbul cairo sydney boston
chicago seattle toronto vancouver mexico brazil spain france italy germany japan china india
portugal canada island lake river sea ocean forest village street road bridge airport station
hotel restaurant cafe bar museum theatre cinema concert festival exhibition library church
university college course exam test grade homework lesson lecture thesis research experiment
data database model chart spreadsheet document file folder backup password login account
version release feature issue ticket review merge branch deploy test tests build pipeline
cluster cloud network router wifi battery charger screen keyboard mouse printer speaker
headphones guitar piano drums violin band album concert lyrics podcast episode series season
novel poem author chapter recipe soup bread cake cookies chocolate cheese rice beans eggs milk
butter sugar salt pepper garlic onion tomato potato carrot apple banana orange lemon strawberry
grapes fish salmon tuna shrimp steak burger sandwich tacos sushi noodles curry dessert ice
cream snack fruit vegetables diet calories weight exercise training marathon race goal score
points player coach league season final champion medal trophy ticket tickets seat seats queue
traffic accident insurance police lawyer court contract lease landlord tenant mortgage loan
salary raise promotion interview resume career startup company business customer customers
sales marketing product design designer engineer developer manager director team teams
launch campaign strategy meeting meetings agenda notes slides presentation demo workshop
conference travel passport visa luggage suitcase hostel airbnb camping tent hiking trail
climbing skiing surfing sailing fishing boat kayak cycling garden plants flowers tree trees
grass vegetables tomatoes roses seeds soil compost birds bees chickens horse cow sheep goat
vet walkies leash collar treats vaccine allergy allergies cough fever flu cold pills dentist
glasses contact lenses surgery recovery therapy therapist anxiety stress mood energy focus
habit habits routine schedule calendar reminder alarm clock watch time zone jetlag nap
birthday anniversary gift present surprise card flowers cake candles balloons guests invite
invitation speech toast photos album memories childhood school friends reunion graduation
ceremony diploma job offer move moving boxes van apartment flat neighbourhood commute parking
petrol gas electric charger tesla bike scooter helmet lock repair mechanic tyres brakes engine
oil service warranty refund receipt return exchange complaint support chat bot assistant
language spanish french german italian portuguese japanese chinese english grammar vocabulary
words sentence translation accent lessons duolingo practice progress level fluent`)

// wordsNames are the people of Words' text (Names without Gonçalo and
// Patrícia).
var wordsNames = strings.Fields(`Maria Tomás Ana João Sofia Rui Pedro Beatriz Carlos Marta Joana Diogo
Catarina Nuno Sara Tiago Rita Bruno Helena André Clara Paulo Teresa Hugo Leonor Filipe Alice Laura
Ricardo Mariana Vasco Daniel Anna Ben Chloe David Emma Felix Grace Hannah Ivan Julia Kenji Liam Mei
Noah Olga Priya Sam Yusuf Zoe`)
