// Package config owns Recall's settings: the typed Config structs, the single
// place where every default lives (Default), validation of every value
// (Config.Validate), and loading from an optional YAML file plus RECALL_*
// environment overrides (Load). It also knows which values are secrets
// (Config.Secrets, Config.Redacted) so that logs and dumps never show them.
//
// Keys are named by their mapstructure tags joined with dots, e.g.
// "memory.budget.total". Every key can be overridden by the environment
// variable "RECALL_" + the key upper-cased with dots replaced by
// underscores, e.g. RECALL_MEMORY_BUDGET_TOTAL. Precedence, highest first:
// environment, file, defaults. An environment variable that is set but empty
// is treated as unset.
//
// The example file config.yaml at the repository root lists every key with
// its default; tests keep it equal to Default.
//
// The package imports no other project package.
package config
