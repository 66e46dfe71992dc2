package access

import "github.com/recallbot/recall/pipeline"

var (
	tgKey  = pipeline.Key{Channel: "telegram", Chat: "123", Thread: "0"}
	grpKey = pipeline.Key{Channel: "telegram", Chat: "-100200", Thread: ""}
)
