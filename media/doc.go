// Package media owns what arrives besides text: it is the pipeline stage
// that turns a voice note into its transcript, a photo into what a vision
// model saw, and a text document into its text, before the turn is answered
// and stored — so what was heard or seen is remembered and searchable like
// anything typed. What it cannot handle (transcription off, over the limits,
// a download or a model failing) gets a clear answer and leaves nothing
// half-stored.
package media
