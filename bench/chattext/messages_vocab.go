package chattext

import "strings"

// The vocabulary of Messages (the store benchmarks and the archive fixture).

// messageFunctionWords head the vocabulary: the most frequent words of chat
// text, roughly in frequency order. Every one is a stopword (memory.Terms
// drops it), so the index holds them but no query ever searches for them.
var messageFunctionWords = strings.Fields(`the i to you and a it is that of in my for on have be this was so
but just with me not what do we are at if can it's i'm don't your all he she they about there out up no
yes yeah like know get got an or from as by will would could should been were them her him his our their
then than when how why which who now here well really very too much more some any ok thanks`)

// Names are the people who chat and are talked about.
var Names = strings.Fields(`Maria Tomás Ana João Sofia Rui Pedro Beatriz Carlos Marta Joana Diogo
Catarina Nuno Sara Tiago Rita Bruno Helena André Clara Paulo Teresa Hugo Leonor Filipe Alice Gonçalo Laura
Ricardo Mariana Vasco Patrícia Daniel Anna Ben Chloe David Emma Felix Grace Hannah Ivan Julia Kenji Liam Mei
Noah Olga Priya Sam Yusuf Zoe`)

// messageContentWords are 3,000 English words in rough order of frequency: the
// whole-word, dictionary-checked entries of the GPT-2 BPE vocabulary in merge
// order, stopwords and offensive words removed.
var messageContentWords = strings.Fields(`
one said man year part time new people work play first act bet two back may add need see use
make every look years right way call end long think set show say good start made last count
point used game report world though take going hand ear high help found person great sign run
follow find team system lead around car law read real support fact day three met says public war
power different state head another child since life develop pass turn second something month
government without leg put never level art things might effect allow feel result lot fun using
big ask best number must direct open post come seem week far place form told stand next little
mark information bus invest hard import test rest full care case less list top home left better
data attack build main including interest keep class small plan percent camp pay process program
name four return called move group men current always women old near free design change book
away able country order million thing school days health already friend least talk later view
word cost enough give large win important business clear expect kind mean past perform story
season claim came within line project control air money family making bit police happen sit sure
appear light water times grow company example actually ever tax major often human job available
record sing news following hour become took product means certain deal side reason elect
official possible hold city children night done working body whether author proper seen course
event pot short press protect thought question several given fund went meet games understand
makes love complete account others young along according yet members among employ low likely
president access known early fight sent today market based strong problem social campaign months
five players success present particular try suggest land local political asked former close
getting across believe together individual face value area key mom anything experience mind
future cut video net connect amount either fail special black looking fire almost study miss
community media food comes single half started quick issue else consider taken true ago added
bad similar character reported type entire history live trying discuss self room fall idea sound
someone object player rather service nothing provide party exist house behind however sum
function front series points specific previous custom court whole treat probably learn version
check super address field common begin bring action wanted attempt due shall six step stop hours
create national taking red research break space recent general hit period everything saying
include position pick matter relations bar ground security concern white seems watch wind mass
pack outside pain foot third evidence threat item represent significant simply longer file upon
coming quite difficult woman text require military review subject instead issues minutes code
higher page students method policy accept words final changes friends respect damage total needs
development age results gun rights running port rate pretty target saw works everyone pie block
walk shows site risk began size decision continue parent easy drug sense energy girl request
soon host states material moment especially services role office track heart ball personal
building increase needed lost became groups wrote prop inside wrong statement film music share
release forward stay original card favor cases section leave required countries questions cell
shoot anyone affect online ability content force sold soft companies article playing held
released federal interview install received source serious created cause late speak legal weeks
model exact takes regard price problems leaders deep contract relationship base potential link
lower contact ill mother provided average exam perfect buy shot collect played officials simple
industry hands pull round user range private ways except terms performance bill environment
worth chance speed match living response enjoy via member tool offer turned recently blood hope
comment gave select goes impact boy felt expected image prevent involved eyes quickly led candid
earlier focus popular various levels road heard users improve father search profess knew loss
events billion cover areas gets vote nearly included happened hot whose civil respond features
economic technology option training effects fast occur website email oil currently goal decided
travel mention election phone looks situation quality table staff tried addition box lack wide
board slow path worked pen engine looked victim property color network date extra reports
capital command allowed numbers fair reach broad couple screen lives prior approach built rules
financial considered brought products visit document conduct completely written draw published
secret standard arm fell foreign regular increased usually dark additional production race huge
town attention terror meeting arrest fear extreme workers directly population cross message
nation poll answer carry hear natural dog trade multiple fans sort global language necessary
details medical receive morning bank sat device safe systems assist battle paper growth cast
plans parts wall movement practice display sometimes son avoid towards talking correct spent
term wants forces ones immediately parents shown conditions stuff includes announced described
door changed clean club paid attacks characters alone director load finally exactly nature
career latest weight note teams hundred consist ten costs normal obvious star ready implement
song interesting giving middle remember demand treatment danger guy physical related remain
refer easily uses write leader reading designed appears choice particularly allows difference
although relative application society poor writing seven starting print gives cool thinking save
limited meaning nice gas eight feet effort brain touch studies center computer increasing store
comments doll wife laws modern opportunity powerful claims title beyond sell violence compared
options throughout files detail piece named education drive items student throw scene complex
concept status died knowledge beginning certainly guys slight fine fat perhaps income majority
greater feed safety unique gone showed counter leading send defense continued provides prison
happy economy trust weapons analysis science figure software officers remains cat stage enter
passed despite movie voice toward region values mount officer lay pressure books reasons
activity calls letter choose types platform quarter maybe moving gold patients truth charge rock
credit moved names straight feature rule click aware pattern associated style stories
individuals summer fully followed jobs seemed reality lines park measure brother growing cry
rates positive culture map coach kids journal false web sleep contain bed meant notice favorite
condition purpose organization critic larger actions kept aim benefits actual vehicle chief
efforts wait adult overall speech highly female error effective failed programs ahead crime
location behavior rare caused ship active green reflect firm birth clearly agency memory biggest
rap basic band suspect spread absolute places cards destroy appeared beg temper length blog
resources spot forced thousands generally drink thus eye college ensure apparent religious minor
primary developed peace skin blue families apply inform limit resist hair eventually helped fit
sales seconds strength feeling tour knows spokes ideas launch bottom script rat whatever mode
agree sources initial restrict wonder burn reached sun cook male climate fix alleged images
schools drop stream previously pet double default rank weapon stock picture century citizens
onto expand hero wild update customers criminal leaving otherwise basis recommend floor crowd
central dream download window happens unit tend becomes fighting predict heavy fan spend
football transfer therefore mission noted disease edit progress adding raised seeing agreement
server debate supposed largest successful jump owners offers shooting defend beat records
employees devices benefit surface harm shut lose challenge station intelligence requires
hospital spirit offered produce creating ended daily voters smart extremely opinion gain useful
budget comfort background episode enemy trial establish continues showing posted eat rise signed
grand projects conference responsible learned returned brief brand highest train incident
nuclear charges adjust earth prices draft runs candidate management teach separate instance
unless operations faith activities traditional direction machine surround push easier argument
spending theory calling influence commit photo wish revealed enforce miles interested solution
removed plant achieve advantage slightly placed mostly negative setting produced connection
driver executive assault born structure reduce decades league join die assess goals senior
parties learning street camera skills existing willing critical serve cold species animals older
teacher prefer thread manager professional notes fresh doubt opened guess explain attract string
context solid cities asking random depend mentioned claimed definitely core opening believed
holding ice authorities score cells neighbor remove district worse concerns presidential
policies independent protection sudden strategy girls missing politics spell graph labor kick
steps smaller roll researchers closed transport aspect none marriage elements hearing supported
testing massive stick guard border copy owner digital task issued detect partners shared cancer
explained heat investment wood tools belief crisis operation contains express finding funding
established degree dangerous freedom church catch presence authority button valid weak starts
reference collection beautiful tells waiting providing daughter master purposes equal turns
documents watching ran reject victims witness reform caught traffic models served batter agreed
truly units variety amazing confirmed entirely purchase element cash determine cars views drugs
department covered mere mix unlike stopped skill becoming appropriate weekend sites animal scale
charged instruct methods judge dollars standing debt driving album commercial discovered output
switch annual stated residents allowing factors occurred north injury insurance repeated arms
construction forms mental equipment discussion regarding chair proceed supply input wealth
putting located kid telling proposed funds baby spoke earn exchange pair arrested identified
mobile hundreds trend electric nine coverage appeal finished flow deliver photos pieces rough
partner concerned suggested corner husband internet balance sounds millions radio combat fuel
distance tests managed measures attend generation conversation gender carried arrived failure
minimum worst keeping intended illegal determined trip raise feels package justice farm reduced
novel capacity impossible plays minister communities interests conflict requirements operating
committed relatively south afford identity decisions accused victory seek tight humans familiar
audience internal sides appoint enforcement joined differences protest twice glass expression
decide planning handle maximum sea helps bound mouth standards army bug planet winning faster
broken defined healthy competition announce client possibly finish crew editor hate sale pages
opposition refuge flight apart applications shape speaking worry introduced diet functions
stress accounts honest tree exercise scientists legislation survey rich maintain leadership
magic figures absolutely fourth presented alcohol grab plus alternative approx objects
television committee motor appearance sitting strike fold belong prepared indeed rent advice
changing listed launched lived sets applied housing odd powers remaining causes manner suggests
ends scientific coal minute leaves completed focused monitor vehicles affected construct follows
ton homes largely votes businesses yards materials guide closer sports taxes decade dropped
delay secure treated filed van column consult entry marijuana apparently increases specifically
religion frame helping edge bigger boost row rid vision wearing award factor god enemies
accident stars expensive lock format soldiers agent rapid tough believes wear commission warm
king patient happening bought soul seat revolution ring offensive returns videos famous
candidates percentage visual trouble prove connected possibility expert library fellow dry signs
quiet pure filled unable vast identify fish bodies developing experienced domestic combined
chemical pool egg hurt markets conservative supporters agencies temperature conducted pulled
advance license imagine hell fixed surprise craft dial relevant entered leads pictures paying
updates greatest height listen capable offering bright planned sweet typically prospect teen
lots forget severe suit correspond flag deploy thoughts matters adapt fill forth payment spring
losing bringing distribution combination plenty tow seeking examples classes beer moves panel
properly plug estimated defensive volume positions links transform opponent tweet shop fly talks
bag aid plants attorney begins storage metal ordered remained loved prompt updated experts
walking ancient performed neither manufacture selected mine ultimately label meat giant
interpret evening evil obviously advanced weather symbol sole potentially originally deck stood
youth basically involve aircraft confirm messages kit existence turning desire flat neighborhood
pointed professor expressed session bare doctor writer recorded broke orders motion immigration
contrast excellent technical cloud creation strange fort extent rain sample accepted fired
stands boot statements versions selling experiment retail depart bond reaction resolution react
approved replace sport chain emergency route pal banks grew corporate selection slowly attempts
findings index shock cart storm essential reasonable considering university married numerous
seriously referred consistent facts revenue passing gather unknown union browser reporting sand
suddenly surprising somewhat challenges settings experiences receiving joint cultural bull
facing boss increasingly shift streets lie laugh adults customer obtained supporting detailed
picked wire sight developers persons sad cup warning boys bird observed zone channel refused
spokesman acts struggle category realize employee guns thick fairly troops agents battery flu
confident empty sector excited remote destroyed moral dress lit carbon installed violent solar
practices ride improved audio eating properties anywhere blow proud plane square proof talked
sister holds resident resistance split confidence cuts exception zero copyright totally sick
household fees drivers necessarily regulations perspective escape surprised heads causing
targets afternoon adds usual articles injured manage explains linked discussed occasion opposite
faces denied nut disappoint voting institutions drag nearby guilty reward apps upper advert snow
dismiss signal crimes council sufficient historical pin succeed tradition description sky widely
wave definition cycle brings alive frequently intention privacy rail cooper tested comfortable
delivered depth writes assets transition artist components walked root participants noticed
importance assert injuries registered intent missed sentence assistance database buildings
classic thinks fee effectively facility bear chapter dogs latter admitted posts lawyer
controlled menu protected amounts native represents abandon carrying tank declared hat punish
universe opposed hardware coffee owned hall describe portion governments depending offense trick
desk movies remark mail conscious ruling replaced renew shots armed constant taste realized buff
efficient flood consequences anyway iron evolution proposal knowing supports controls merely
fashion gift era kinds legit essentially suffered promise excess prime stores journey requests
consumers tiny crash emotional goods elected blocks island elections broadcast cheap nations
seasons waste fields profile authors deaths formed ongoing assume coast voted flex welcome
locations buying architect harder interface restaurant discover exceed duty pitch responded
extended medium magazine limits external younger remind immediate hidden phase plot exposure
expansion pushed marketing hits narrow perfectly enable precise regime chosen trees recommended
arguments exists bike breaking crazy virtual permission consumer closely hopes array readers
employment creature resulting accurate moments argued sought suffering icon bonus acting
comparison smooth sending dealing attached sees typical finds emails highlight confront topic
understood mob dedicated songs tech aside grant argue containing schedule liberal publicly
heavily everybody facilities division explore shares ideal plastic distinct trading initially
thousand paragraph roughly creative consumption films obtain tall grown watched surrounding
flying serving jail literally exposed lies bat earned specified degrees sharing winter fewer
somewhere attacked domain stronger penalty declined neck fraud currency rising tab talent
village legs acid involving yesterday west visible struck awesome drawn answers threats defeat
vent situations saved faced mistake symptoms falling ending matches explanation anymore letters
risks reportedly plate subjects attempted unlikely marked theme passion info component doctors
granted paint honor smoke payments primarily deals scheduled fundamental protein newspaper
clients feedback stretch hotel sugar milk approval equivalent insert extension constantly
generated recognize vary patterns profession colors infect shell puts delivery brown processing
lights industrial somehow politicians indicate hole techniques competitive campus aspects
helpful shield trigger personally tag keeps bench gap east recovery profit strongly allegations
reporters flash strict parking weird regions intellect finger conclusion feelings extensive
mixed harass territory successfully layer allies bunch normally networks chose opponents
regardless bridge wage radical secretary gang decent uncle investors walls publish generate
promote cutting chest drinking collected hoping warned instructions gear criticism counsel
reduction teaching deeply estimates choices permanent tournament contained wake reveal processes
blind steel carefully gaming houses truck scored sharp afraid scheme decline pushing possession
teachers yield hide colleagues principles loud sin stone taught terrible stuck wheel champions
repeatedly likes bath noise northern ticket alongside river cable wins upcoming survive inspired
statistics yellow urban quarterback register abilities variable thin gotten asks tail exciting
encourage commitment rally spin captured allegedly artists electronic regional myth directed
extract sorry vice wonderful ships activists habit abortion void explicit engaged angry rating
worried apartment estate county immigrants folks targeted informed driven regularly basket
principle alert democracy represented capture announcement hook refugees recognized pilot
returning trail routine courts friendly breath studio impressive fault outcome elsewhere retire
pounds loan ratio gonna invent promised dinner creates operate sustain incredible warrant
lawsuit reviews featured forever poverty laid filter creatures association valuable liquid
incredibly solutions atmosphere blame respectively fifth governor purchased hack intense origin
define careful shoulder tied destruction nobody tip technique legend accord busy hang surgery
uniform scenes scream adopted scores indicated entertain twenty engage smile personnel doors
tone machines entering forest horse complaint academic fruit wine clothes squad stable raw keys
complicated funny relief chart drawing module salt resource somebody participate rose muscle
consent continuing rear provision liked meetings convent auto recording programming proved stab
caption newly edition passes guest armor inches assign prepare depends tracks lists alter
everywhere fought scope enjoyed aggressive recipe rarely subsection southern frequency behalf
sequence worker mainly organized fake concluded chances withdraw tries samples bid photograph
contest signing exit racial sword inner protocol shipping surveillance luck winner silver
unusual crack ties practical province priority describes branch fighters foundation judgment
solve neutral reputation smell bread claiming genetic technologies upgrade developer barely
illness patch stupid protests chat wing parliament render bitcoin recover threatened spiritual
advertising improvements errors sensitive cream exclusive structures stored temporary tickets
possess contracts mountain equally lands rejected transaction provisions gained directory
raising console uncertain measured plain seats estimate contributed episodes movements suffer
mainstream franchise demands agenda dozen clinical visited actor contribute inject listening
congress premium assigned worldwide narrative relation covers grass engineering steal replied
ultimate titles joy hyper officially difficulty resulted restrictions beauty maps electricity
violation usage permit naturally thrown alien pace poison formal genuine procedure trained
crucial lets champion writers connections encounter achieved checks assistant whenever clock
borrow mad personality gains commonly rely moon vulnerable western occurs vessel subsequent
fantasy boat marks ordinary petition adventure ignore factory tasks depression eligible reducing
striking dollar instrument philosophy ruled scenario debut tea absence ham tables chairman pump
rapidly substantial saving assessment dynamic stack hardly sty transactions gate screens
submitted languages falls strikes relax bell disorder locked emissions shortly rival dust
reaching stations applies anger compare aimed regulation jury airport sections medicine hitting
spark ads foods replacement chicken lowest minds involves procedures bills improvement
expectations intellectual spaces mechanism barrel static tips handling journalists comic versus
loop surf beliefs setup brew computers displayed fiscal`)
