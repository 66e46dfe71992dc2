// Package faults holds the end-to-end fault suite (faults_test.go): the
// whole bot — the store on a real SQLite file, the LLM client against the
// llmtest fake OpenAI server, the Telegram adapter against the telegramtest
// fake Bot API, wired by package app as cmd/bot wires them — while one thing at a time
// breaks: the LLM (429 with Retry-After, 5xx, garbage, hanging, the
// connection closed midway), the Bot API (429, 502, hanging) or the disk
// (read-only or full for a while, injected through a SQLite VFS). After each
// fault the suite checks what a user would notice: every reply they saw is
// stored, nothing is answered twice, a persistent failure got one clear
// message, queued writes landed, and the database passes integrity_check.
//
// The package has no code of its own.
package faults
