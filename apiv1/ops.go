package apiv1

// Health answers /health and /live.
type Health struct {
	Status string `json:"status"`
	App    string `json:"app"`
}

// Ready answers /ready when every check passes.
type Ready struct {
	Status string          `json:"status"`
	Checks map[string]bool `json:"checks"` // repo, api_supervisor, controller_core
}
