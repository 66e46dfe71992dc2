// Package ops owns Recall's local HTTP server for operators (http.listen):
// GET /healthz, a JSON report of the database, the write queue and every
// enabled chat channel (200 when all are fine, 503 otherwise), and GET
// /metrics, served by the metrics package's handler. It declares what it
// needs from the rest of Recall as small interfaces; cmd/bot wires them.
package ops
