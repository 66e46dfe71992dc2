package telegram

// The fake Bot API lives in telegramtest (the whole-bot tests use it too);
// these names keep the adapter's tests short.

import (
	"testing"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
)

type (
	fakeAPI  = telegramtest.Server
	fakeCall = telegramtest.Call
	fakeErr  = telegramtest.Err
)

const (
	fakeToken      = telegramtest.Token
	fakeBotID      = telegramtest.BotID
	fakeBotName    = telegramtest.BotName
	dropConnection = telegramtest.DropConnection
)

func newFakeAPI(t testing.TB) *fakeAPI { return telegramtest.NewServer(t) }

var (
	privateChat = telegramtest.PrivateChat
	groupChat   = telegramtest.GroupChat
	mention     = telegramtest.Mention
	filterCalls = telegramtest.FilterCalls
	dumpCalls   = telegramtest.DumpCalls
	parseHTML   = telegramtest.ParseHTML
)
