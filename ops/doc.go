// Package ops owns Recall's local HTTP server for operators (http.listen):
// GET /healthz, a JSON report of the database, the write queue and every
// enabled chat channel and the language model (200 when all are fine, 200
// with status "degraded" when the bot runs without a part it was not
// configured with — no model: it cannot answer chat messages, and a restart
// would not help —, 503 otherwise), and GET
// /metrics, served by the metrics package's handler. It declares what it
// needs from the rest of Recall as small interfaces; cmd/bot wires them.
package ops
