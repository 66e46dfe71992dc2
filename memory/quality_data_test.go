package memory_test

// The planted-facts conversation of BenchmarkRetrievalQuality.

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// benchFact is a fact planted in BenchmarkRetrievalQuality's conversation, and
// the question a user asks about it later. Questions name the person and say
// the same thing in other words, the way people ask; some share nothing with
// the fact but a name (marked "names only").
type benchFact struct {
	Speaker  string
	Text     string
	Question string
}

var benchFacts = []benchFact{
	{"Maria", "Big news from the family: my sister Elena moved to Porto in March, she says the light there is unreal.", "Where is Maria's sister living now, did Elena relocate?"},
	{"Tomás", "We adopted a greyhound last week, he's called Biscuit and he sleeps about twenty hours a day.", "What's the name of the dog Tomás is adopting?"},
	{"Maria", "I finally passed my driving test, third attempt, the examiner even smiled.", "Did Maria ever pass her driver's license exam?"},
	{"Tomás", "Careful with the paella on Saturday, I'm allergic to shellfish, prawns make my throat swell.", "Which seafood is Tomás allergic to?"},
	{"Maria", "My grandmother turns ninety next Sunday, we're throwing her a surprise party in Braga.", "When is Maria's grandma's birthday party?"},
	{"Tomás", "I switched jobs, I'm now a sound engineer at a theatre in Lisbon.", "Where does Tomás work these days?"}, // names only
	{"Maria", "I broke my wrist snowboarding in Andorra in January, the cast comes off soon.", "How did Maria injure her wrist?"},
	{"Tomás", "My son Rafael started cello lessons this autumn, the neighbours are being patient.", "What instrument is Rafael learning to play?"},
	{"Maria", "I signed up for the Berlin marathon in September, so I'm training every morning before work.", "Which marathon is Maria running?"},
	{"Tomás", "The flat in Alfama flooded last night, a pipe burst in the apartment upstairs.", "What happened with the flooding at Tomás's place?"},
	{"Maria", "I'm vegetarian now, haven't eaten meat since the summer.", "Does Maria still eat meat?"},
	{"Maria", "Tomás told me his brother Duarte is getting married in Sintra in June.", "When is the wedding of Tomás's brother?"},
	{"Maria", "I bought a secondhand Vespa, it's mint green and it only starts downhill.", "What color is Maria's scooter?"}, // names only
	{"Tomás", "I'm learning Japanese because we're visiting Kyoto next spring.", "Why is Tomás studying Japanese, is he going to visit Japan?"},
	{"Maria", "Pimenta had three kittens under my bed this morning!", "How many kittens did Maria's cat have?"},
	{"Tomás", "Four months without a cigarette today, I quit smoking in November.", "Has Tomás stopped smoking?"},
	{"Maria", "I got promoted to head of the design team, starting Monday.", "What's Maria's new position after her promotion?"},
	{"Tomás", "My father had knee surgery on Tuesday and he's recovering at home now.", "How is Tomás's dad recovering from the operation?"},
	{"Maria", "We're renovating the kitchen, the new countertops are oak.", "What are Maria's renovation plans for the kitchen?"},
	{"Tomás", "I sold my old Fender guitar to pay for the trip to Cape Verde.", "Why did Tomás sell his guitar?"},
	{"Maria", "Elena is expecting twins in August!", "Is Maria going to be an aunt?"}, // names only
	{"Tomás", "Money is tight so I cancelled the gym membership.", "Did Tomás cancel his gym subscription?"},
	{"Maria", "My landlord is raising the rent by two hundred euros from May.", "How much is Maria's rent going up?"},
	{"Tomás", "I've been volunteering at the animal shelter on Saturdays.", "Where does Tomás volunteer on weekends?"},
	{"Maria", "I'm reading all of Saramago, halfway through Blindness right now.", "Which author has Maria been reading lately?"},
	{"Tomás", "Our band is playing at the Musicbox on the 14th, come if you can.", "When is Tomás's band performing?"},
	{"Maria", "I lost my passport at Madrid airport, the consulate appointment is on Friday.", "Where did Maria lose her passport?"},
	{"Tomás", "My daughter Inês got into medical school in Coimbra!", "Which university accepted Inês?"},
	{"Maria", "I'm terrified of flying, so we're taking the train to Paris.", "How is Maria getting to Paris, is she scared of planes?"},
	{"Tomás", "I started baking sourdough, the starter is named Gertrude.", "What did Tomás call his sourdough starter?"},
	{"Maria", "The neighbour's dog bit me on the ankle last week.", "Was Maria bitten by a dog?"},
	{"Tomás", "I'm colour blind, red and green look the same to me.", "Is Tomás color-blind?"},
	{"Maria", "We planted an olive tree in the garden for my mother's birthday.", "What tree did Maria plant for her mom?"},
	{"Tomás", "The doctor says I have type 2 diabetes, so no more sugar in my coffee.", "What illness does Tomás have?"}, // names only
	{"Maria", "I won the photography contest with my picture of the lighthouse.", "What did Maria's winning photo show?"},
	{"Tomás", "I'm moving to Rotterdam in the autumn, the port authority offered me a job.", "Why is Tomás relocating to the Netherlands?"}, // names only
	{"Maria", "My laptop died, so I'm using my brother Miguel's old one for now.", "Whose computer is Maria borrowing?"},                    // names only
	{"Tomás", "I got a tattoo of a swallow on my forearm, my mum hasn't seen it yet.", "What tattoo did Tomás get?"},
	{"Maria", "I'm taking salsa lessons on Thursday nights.", "What kind of dance classes is Maria taking?"},
	{"Tomás", "My grandfather was a fisherman in Nazaré all his life.", "What did Tomás's grandpa do for a living?"},
	{"Maria", "I have a peanut allergy, I always carry an EpiPen.", "Does Maria have any food allergies?"},
	{"Tomás", "We're saving for a house in Setúbal, hopefully next year.", "Is Tomás buying a home in Setúbal?"},
	{"Maria", "I can't stand coriander, it tastes like soap to me.", "Which herb does Maria dislike?"}, // names only
	{"Tomás", "My car got towed outside the stadium after the Benfica match.", "Why was Tomás's car towed away?"},
	{"Maria", "I'm writing a children's book about a penguin who can't swim.", "What is Maria's book about?"},
	{"Tomás", "I climbed Mount Pico in the Azores, it took nine hours.", "Which mountain did Tomás climb?"},
	{"Tomás", "Maria and Elena are opening a bakery together in the spring, I already ordered a cake.", "What business are Maria and Elena starting?"},
	{"Tomás", "I keep having nightmares since the car accident.", "Is Tomás still having bad dreams after the crash?"},
	{"Maria", "I speak four languages: Portuguese, French, German and a bit of Swahili.", "How many languages does Maria speak?"},
	{"Tomás", "My mother is retiring after forty years as a schoolteacher.", "When does Tomás's mum retire?"},
}

// qualityKey is the conversation of BenchmarkRetrievalQuality.
var qualityKey = pipeline.Key{Channel: "telegram", Chat: "4242"}

// qualityConversation builds a long chat between Maria and Tomás (and the
// bot): filler turns from the Zipf vocabulary, which mention their family
// and friends too, with every fact of benchFacts planted once at a random
// place. planted[i] is the index in the returned messages of fact i.
func qualityConversation(filler int) (msgs []memory.Message, planted []int) {
	g := chattext.NewMessages(42)
	r := rand.New(rand.NewPCG(7, 8))
	people := []string{"Maria", "Tomás"}
	mentioned := []string{"Maria", "Tomás", "Elena", "Rafael", "Duarte", "Inês", "Miguel", "Ana", "João", "Pedro"}
	at := map[int]int{} // filler position → fact
	for i := range benchFacts {
		for {
			p := 20 + r.IntN(filler-40)
			if _, taken := at[p]; !taken {
				at[p] = i
				break
			}
		}
	}
	planted = make([]int, len(benchFacts))
	t := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	add := func(role memory.Role, sender, text string) {
		t = t.Add(time.Duration(1+r.IntN(600)) * time.Second)
		m := memory.Message{Key: qualityKey, Role: role, SenderName: sender, Text: text, Time: t,
			PlatformID: strconv.Itoa(len(msgs) + 1)}
		if role == memory.RoleUser {
			m.SenderID = strconv.Itoa(len(sender))
		}
		msgs = append(msgs, m)
	}
	for i := 0; i < filler; i++ {
		if f, ok := at[i]; ok {
			planted[f] = len(msgs)
			add(memory.RoleUser, benchFacts[f].Speaker, benchFacts[f].Text)
		}
		if r.IntN(100) < 15 {
			add(memory.RoleAssistant, "", g.Message(true, mentioned))
		} else {
			add(memory.RoleUser, people[r.IntN(2)], g.Message(false, mentioned))
		}
	}
	return msgs, planted
}
