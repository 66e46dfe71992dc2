// Package config owns Recall's settings: the typed Config structs, the single
// place where every default lives (Default), validation of every value
// (Config.Validate), and loading from an optional YAML file plus RECALL_*
// environment overrides (Load). It also knows which values are secrets
// (Config.Secrets, Config.Redacted) so that logs and dumps never show them.
//
// Keys are named by their mapstructure tags joined with dots, e.g.
// "memory.budget.total". Load reads them with viper: every key can be set by
// the environment variable "RECALL_" + the key upper-cased with dots replaced
// by underscores, e.g. RECALL_MEMORY_BUDGET_TOTAL (each bound explicitly).
// Precedence, highest first: environment, .env file, YAML file, defaults. A
// variable that is set but empty counts: it sets its key to empty, or is
// refused, naming it, where empty means nothing. On top of viper, Load
// refuses unknown keys and RECALL_* variables with a "did you mean", and
// names the key, the expected type and the value's origin in every error.
//
// The example file config.yaml at the repository root lists every key with
// its default; tests keep it equal to Default.
//
// The package imports no other project package.
package config
