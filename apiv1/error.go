package apiv1

// Error is the envelope of every failure.
type Error struct {
	Error             string         `json:"error"`
	Code              string         `json:"code,omitempty"`
	RecommendedAction string         `json:"recommended_action,omitempty"`
	Details           map[string]any `json:"details,omitempty"`
	RequestID         string         `json:"request_id,omitempty"`
}
