package config

import (
	"strings"
	"time"

	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/logs"
	"github.com/recallbot/recall/media"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Enumerated values accepted by string settings. Each is declared once, by
// the package that acts on it; these name them for the configuration.
const (
	LogLevelDebug = logs.LevelDebug
	LogLevelInfo  = logs.LevelInfo
	LogLevelWarn  = logs.LevelWarn
	LogLevelError = logs.LevelError

	LogFormatText = logs.FormatText
	LogFormatJSON = logs.FormatJSON

	StorageSQLite = string(memory.StorageSQLite)
	StorageJSON   = string(memory.StorageJSON)

	// GroupReplyMention answers in group chats only when the bot is
	// mentioned or replied to; GroupReplyAlways answers every message.
	GroupReplyMention = string(pipeline.GroupReplyMention)
	GroupReplyAlways  = string(pipeline.GroupReplyAlways)
)

// DefaultLLMBaseURL is the OpenAI API endpoint. Any other base URL is taken
// to be a local or compatible server that may not need an API key.
const DefaultLLMBaseURL = "https://api.openai.com/v1"

// DefaultSystemPrompt is the system prompt used when llm.system_prompt is not
// set.
const DefaultSystemPrompt = "You are Recall, a helpful assistant with long-term memory. " +
	"Use what you remember about the user and earlier conversations when it helps, " +
	"never invent memories, and answer clearly and concisely."

// redactedValue replaces non-empty secrets in Redacted.
const redactedValue = "***"

// Config is the complete runtime configuration of Recall. Each field owns one
// concern; the mapstructure tags are the YAML keys (and, upper-cased with a
// RECALL_ prefix, the environment variable names).
type Config struct {
	Data     Data     `mapstructure:"data"`
	Database Database `mapstructure:"database"`
	Log      Log      `mapstructure:"log"`
	LLM      LLM      `mapstructure:"llm"`
	Memory   Memory   `mapstructure:"memory"`
	Pipeline Pipeline `mapstructure:"pipeline"`
	Access   Access   `mapstructure:"access"`
	Telegram Telegram `mapstructure:"telegram"`
	WhatsApp WhatsApp `mapstructure:"whatsapp"`
	HTTP     HTTP     `mapstructure:"http"`
	Limits   Limits   `mapstructure:"limits"`
	Shutdown Shutdown `mapstructure:"shutdown"`
	Media    Media    `mapstructure:"media"`

	warnings []string // what Load found usable but unwise (Warnings)
}

// Warnings returns what Load found usable but unwise, for the bot to log at
// start: a secret written in the configuration file itself.
func (c Config) Warnings() []string { return c.warnings }

// Media owns what Recall does with voice notes, photos and documents.
type Media struct {
	Transcription Transcription `mapstructure:"transcription"`
	// Vision: auto (try the model; one that refuses images is not asked
	// again), on, or off.
	Vision           string `mapstructure:"vision"`
	MaxImageBytes    int    `mapstructure:"max_image_bytes"`
	MaxDocumentBytes int    `mapstructure:"max_document_bytes"`
	MaxPDFBytes      int    `mapstructure:"max_pdf_bytes"`
	// MaxImagePixels refuses larger images from their header, before
	// they are decoded.
	MaxImagePixels int `mapstructure:"max_image_pixels"`
	// Workers bound the child processes that parse PDFs and images.
	Workers Workers `mapstructure:"workers"`
	// KeepImages keeps the bytes of the photos users send under
	// data/media/ (0600), purged with the rest; off, only their
	// description is stored.
	KeepImages bool `mapstructure:"keep_images"`
}

// Workers owns the limits of the child processes that parse outside
// files (package sandbox): how many at once, the memory they share, and
// each one's wall clock and CPU time.
type Workers struct {
	Count      int           `mapstructure:"count"`
	MemoryMB   int           `mapstructure:"memory_mb"`
	Wait       time.Duration `mapstructure:"wait"`
	Timeout    time.Duration `mapstructure:"timeout"`
	CPUSeconds int           `mapstructure:"cpu_seconds"`
}

// Transcription owns speech-to-text for voice notes and audio.
type Transcription struct {
	Model      string `mapstructure:"model"`    // "" = off
	BaseURL    string `mapstructure:"base_url"` // "" = llm.base_url
	APIKey     string `mapstructure:"api_key" secret:"true"`
	Language   string `mapstructure:"language"` // "" = detect
	MaxSeconds int    `mapstructure:"max_seconds"`
	MaxBytes   int    `mapstructure:"max_bytes"`
	ShowHeard  bool   `mapstructure:"show_heard"` // "🎤 heard: …" before the answer
}

// Vision modes, declared by package media.
const (
	VisionAuto = media.VisionAuto
	VisionOn   = media.VisionOn
	VisionOff  = media.VisionOff
)

// Data owns where Recall keeps its on-disk state (databases, JSON stores,
// WhatsApp session).
type Data struct {
	Dir string `mapstructure:"dir"`
}

// Database owns where conversations live when they are not in data.dir:
// URL "" keeps them in SQLite (data.dir/recall.db, the default); a
// postgres:// URL puts them in that PostgreSQL database. It is a secret: it
// may hold a password.
type Database struct {
	URL string `mapstructure:"url" secret:"true"`
	// TurnLease is how long a replica's claim on a turn lasts without
	// renewal (another replica takes the turn over after it); LeaderLease
	// the same for the replica that polls Telegram. PostgreSQL only.
	TurnLease   time.Duration `mapstructure:"turn_lease"`
	LeaderLease time.Duration `mapstructure:"leader_lease"`
}

// Log owns the process logger: minimum level and output format.
type Log struct {
	Level  string `mapstructure:"level"`  // debug|info|warn|error
	Format string `mapstructure:"format"` // text|json
}

// LLM owns the connection to the OpenAI-compatible chat completion API and
// the generation parameters used for replies and summaries.
type LLM struct {
	BaseURL      string        `mapstructure:"base_url"`
	APIKey       string        `mapstructure:"api_key" secret:"true"`
	Model        string        `mapstructure:"model"`
	SummaryModel string        `mapstructure:"summary_model"` // "" = same as Model
	Temperature  float64       `mapstructure:"temperature"`
	MaxTokens    int           `mapstructure:"max_tokens"`
	Timeout      time.Duration `mapstructure:"timeout"`      // the longest silence of a streamed answer (before its first token, between two)
	TurnTimeout  time.Duration `mapstructure:"turn_timeout"` // an answer's start, retries included; a non-streamed request as a whole
	// StillThinkingAfter is how long a user waits before a "still
	// thinking…" note, once per message (a message where the platform
	// cannot take it away again); 0 = never.
	StillThinkingAfter time.Duration `mapstructure:"still_thinking_after"`
	MaxRetries         int           `mapstructure:"max_retries"`
	// UnhealthyAfter failed calls in a row make /healthz's llm part fail.
	UnhealthyAfter int    `mapstructure:"unhealthy_after"`
	Concurrency    int    `mapstructure:"concurrency"` // max LLM calls in flight
	SystemPrompt   string `mapstructure:"system_prompt"`
	// ContextWindow is the model's context window in tokens; 0 = from a
	// built-in table of common models (8,192 for others).
	ContextWindow int   `mapstructure:"context_window"`
	Tools         Tools `mapstructure:"tools"`
}

// Tools configures the memory tools offered to the model.
type Tools struct {
	Mode      string `mapstructure:"mode"`       // auto, on or off
	MaxRounds int    `mapstructure:"max_rounds"` // tool rounds per turn at most
}

// Tool modes, declared by package chat.
const (
	ToolsAuto = chat.ToolsAuto
	ToolsOn   = chat.ToolsOn
	ToolsOff  = chat.ToolsOff
)

// Configured reports whether the LLM can be called: an API key is set, or
// the base URL points somewhere other than OpenAI (local servers such as
// Ollama need no key).
func (l LLM) Configured() bool {
	if l.APIKey != "" {
		return true
	}
	base := strings.TrimRight(strings.TrimSpace(l.BaseURL), "/")
	return base != "" && !strings.EqualFold(base, DefaultLLMBaseURL)
}

// SummaryModelOrDefault returns the model used for summaries: SummaryModel
// when set, otherwise Model.
func (l LLM) SummaryModelOrDefault() string {
	if l.SummaryModel != "" {
		return l.SummaryModel
	}
	return l.Model
}

// Memory owns long-term memory: whether it is on for new users, where it is
// stored, when conversations are summarised, how many summaries stay active,
// retention, and the token budget of the prompt assembled from it.
type Memory struct {
	EnabledByDefault  bool          `mapstructure:"enabled_by_default"`
	Storage           string        `mapstructure:"storage"`   // sqlite|json, for new users
	Threshold         int           `mapstructure:"threshold"` // user turns between level-1 summaries
	KeepRecentTurns   int           `mapstructure:"keep_recent_turns"`
	MaxActivePerLevel int           `mapstructure:"max_active_per_level"`
	MaxActiveTotal    int           `mapstructure:"max_active_total"`
	MaxMemories       int           `mapstructure:"max_memories"`
	RetentionDays     int           `mapstructure:"retention_days"` // 0 = keep forever
	RetentionInterval time.Duration `mapstructure:"retention_interval"`
	WriteQueue        int           `mapstructure:"write_queue"`
	Timezone          string        `mapstructure:"timezone"`        // IANA name for time words in questions; "" = the server's
	Feedback          bool          `mapstructure:"feedback"`        // archive snippets: a second search with the best hits' words (assemble.WithFeedback); on by default
	SearchIndexMB     int           `mapstructure:"search_index_mb"` // MiB for big conversations' search indexes in memory (memory.Options.SearchMemory); 0 = none
	Budget            Budget        `mapstructure:"budget"`
	Facts             Facts         `mapstructure:"facts"`
	Embeddings        Embeddings    `mapstructure:"embeddings"`
}

// SearchIndexBytes is memory.search_index_mb as memory.Options.SearchMemory
// takes it: bytes, or -1 for none (0 MiB).
func (m Memory) SearchIndexBytes() int {
	if m.SearchIndexMB == 0 {
		return -1
	}
	return m.SearchIndexMB << 20
}

// Location is the time zone in which time words of questions ("yesterday",
// "in May") are read: memory.timezone, or the server's when it is empty.
func (m Memory) Location() (*time.Location, error) {
	if m.Timezone == "" {
		return time.Local, nil
	}
	return time.LoadLocation(m.Timezone)
}

// Budget owns the prompt token budget: the overall total and the share of
// each prompt section.
type Budget struct {
	Total     int `mapstructure:"total"`
	System    int `mapstructure:"system"`
	Memories  int `mapstructure:"memories"`
	Summaries int `mapstructure:"summaries"`
	Snippets  int `mapstructure:"snippets"`
	Recent    int `mapstructure:"recent"`
}

// Facts owns the optional extraction of durable user facts and their prompt
// budget.
type Facts struct {
	Enabled bool `mapstructure:"enabled"`
	Budget  int  `mapstructure:"budget"`
}

// Embeddings owns the optional semantic retrieval: the OpenAI-compatible
// embeddings endpoint the archive and each question are embedded with. An
// empty Model turns it off.
type Embeddings struct {
	Model      string        `mapstructure:"model"`                 // e.g. text-embedding-3-small; "" = off
	BaseURL    string        `mapstructure:"base_url"`              // "" = llm.base_url
	APIKey     string        `mapstructure:"api_key" secret:"true"` // "" = llm.api_key
	Dimensions int           `mapstructure:"dimensions"`            // 0 = the model's own
	Timeout    time.Duration `mapstructure:"timeout"`               // the question's embedding in a turn
	Batch      int           `mapstructure:"batch"`                 // messages per background request
}

// Enabled reports whether embeddings are configured.
func (e Embeddings) Enabled() bool { return strings.TrimSpace(e.Model) != "" }

// Endpoint returns the base URL and API key to embed with: the
// embeddings' own, or the LLM's when unset.
func (c Config) EmbeddingsEndpoint() (baseURL, apiKey string) {
	baseURL, apiKey = c.Memory.Embeddings.BaseURL, c.Memory.Embeddings.APIKey
	if baseURL == "" {
		baseURL = c.LLM.BaseURL
	}
	if apiKey == "" {
		apiKey = c.LLM.APIKey
	}
	return baseURL, apiKey
}

// Pipeline owns message-processing concurrency.
type Pipeline struct {
	MaxConcurrent int `mapstructure:"max_concurrent"` // conversations processed at once
}

// Access owns who may talk to the bot. Entries are "channel:id", e.g.
// "telegram:123456", "whatsapp:4915112345678", "console:local".
type Access struct {
	Open         bool     `mapstructure:"open"` // anyone may talk to the bot
	AllowedUsers []string `mapstructure:"allowed_users"`
	Admins       []string `mapstructure:"admins"`
}

// Telegram owns the Telegram channel: bot token, API endpoint, webhook or
// long polling, group behaviour and streaming. An empty token turns the
// channel off.
type Telegram struct {
	Token   string          `mapstructure:"token" secret:"true"`
	APIURL  string          `mapstructure:"api_url"`
	Webhook TelegramWebhook `mapstructure:"webhook"`
	Groups  Groups          `mapstructure:"groups"`
	Stream  bool            `mapstructure:"stream"`
	// LinkPreviews shows a link's preview under answers (off by default:
	// previews clutter answers and change while a streamed message grows).
	LinkPreviews bool `mapstructure:"link_previews"`
}

// TelegramWebhook owns webhook delivery. An empty URL means long polling.
type TelegramWebhook struct {
	URL    string `mapstructure:"url"`
	Listen string `mapstructure:"listen"`
	Secret string `mapstructure:"secret" secret:"true"`
}

// Groups owns how a channel behaves in group chats.
type Groups struct {
	Reply string `mapstructure:"reply"` // mention|always
}

// WhatsApp owns the WhatsApp channel: on/off, group behaviour, how far back
// queued messages are still answered after reconnecting, and the length at
// which long replies are split.
type WhatsApp struct {
	Enabled       bool          `mapstructure:"enabled"`
	Groups        Groups        `mapstructure:"groups"`
	BacklogWindow time.Duration `mapstructure:"backlog_window"`
	SplitLimit    int           `mapstructure:"split_limit"`
	// ClientVersion forces the WhatsApp Web version presented at login
	// ("2.3000.1031234567"); "" fetches the current one.
	ClientVersion string `mapstructure:"client_version"`
}

// HTTP owns the local HTTP server (health, metrics). An empty Listen turns
// it off.
type HTTP struct {
	Listen string `mapstructure:"listen"`
}

// Limits owns per-user rate limits. Zero means unlimited.
type Limits struct {
	MessagesPerMinute int `mapstructure:"messages_per_minute"`
	TokensPerDay      int `mapstructure:"tokens_per_day"`
}

// Shutdown owns graceful shutdown.
type Shutdown struct {
	Timeout time.Duration `mapstructure:"timeout"`
}

// TelegramEnabled reports whether the Telegram channel is on (a token is
// set).
func (c Config) TelegramEnabled() bool {
	return c.Telegram.Token != ""
}

// Default returns the built-in configuration. It is the one place where
// defaults are defined; Load starts from it.
func Default() Config {
	return Config{
		Data: Data{Dir: "data"},
		Log:  Log{Level: LogLevelInfo, Format: LogFormatText},
		LLM: LLM{
			BaseURL:            DefaultLLMBaseURL,
			Model:              "gpt-4o-mini",
			Temperature:        0.7,
			MaxTokens:          1024,
			Timeout:            2 * time.Minute, // a CPU-only local model may think a minute before its first token
			TurnTimeout:        5 * time.Minute,
			StillThinkingAfter: 10 * time.Second,
			MaxRetries:         4,
			UnhealthyAfter:     3,
			Concurrency:        8,
			SystemPrompt:       DefaultSystemPrompt,
			Tools:              Tools{Mode: ToolsAuto, MaxRounds: 3},
		},
		Media: Media{
			Transcription:    Transcription{MaxSeconds: 600, MaxBytes: 25 << 20, ShowHeard: true},
			Vision:           VisionAuto,
			MaxImageBytes:    20 << 20,
			MaxDocumentBytes: 1 << 20,
			MaxPDFBytes:      20 << 20,
			MaxImagePixels:   40_000_000,
			Workers:          Workers{Count: 2, MemoryMB: 256, Wait: 10 * time.Second, Timeout: 15 * time.Second, CPUSeconds: 5},
		},
		Memory: Memory{
			EnabledByDefault:  true,
			Storage:           StorageSQLite,
			Threshold:         10,
			KeepRecentTurns:   4,
			MaxActivePerLevel: 5,
			MaxActiveTotal:    10,
			MaxMemories:       50,
			RetentionDays:     0,
			RetentionInterval: time.Hour,
			WriteQueue:        10000,
			Feedback:          true,
			SearchIndexMB:     16,
			Budget: Budget{
				Total:     8000,
				System:    1500,
				Memories:  500,
				Summaries: 2000,
				Snippets:  1500,
				Recent:    3000,
			},
			Facts:      Facts{Enabled: false, Budget: 300},
			Embeddings: Embeddings{Timeout: 300 * time.Millisecond, Batch: 64},
		},
		Pipeline: Pipeline{MaxConcurrent: 64},
		Access:   Access{Open: false},
		Telegram: Telegram{
			APIURL:  "https://api.telegram.org",
			Webhook: TelegramWebhook{Listen: ":8443"},
			Groups:  Groups{Reply: GroupReplyMention},
		},
		WhatsApp: WhatsApp{
			Groups:        Groups{Reply: GroupReplyMention},
			BacklogWindow: 10 * time.Minute,
			SplitLimit:    16000,
		},
		HTTP:     HTTP{Listen: "127.0.0.1:9090"},
		Shutdown: Shutdown{Timeout: 30 * time.Second},
		Database: Database{TurnLease: 30 * time.Second, LeaderLease: 15 * time.Second},
	}
}
