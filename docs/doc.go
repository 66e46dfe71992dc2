// Package docs holds Recall's documentation by audience (operations, memory,
// scaling, figures, design) and the tests that keep it true: every relative
// link and #anchor of README.md and docs/*.md resolves, the configuration
// reference in operations.md is the one generated from config.Keys and
// config.yaml's comments, and each docker-compose.yml profile starts exactly
// its setup. It has no code of its own.
//
// Regenerate the configuration reference after changing a key or its
// comment in config.yaml:
//
//	go generate ./docs
package docs

//go:generate go test -run ^TestConfigReference$ . -args -update
