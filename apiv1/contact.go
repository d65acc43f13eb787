package apiv1

// WaitlistRequest is the body of POST /api/v1/waitlist.
type WaitlistRequest struct {
	Email string `json:"email"`
}

// WaitlistResponse answers POST /api/v1/waitlist (201). A repeated address
// gets the same answer, so the endpoint does not reveal who signed up.
type WaitlistResponse struct {
	Status     string `json:"status"` // "on_waitlist"
	Email      string `json:"email"`  // as stored: trimmed, lower case
	Message    string `json:"message"`
	NextAction string `json:"next_action"`
}

// FeedbackRequest is the body of POST /api/v1/feedback (spec 2.9).
type FeedbackRequest struct {
	Type        string         `json:"type"` // bug, feature_request, provisioning, job_type_request
	Title       string         `json:"title"`
	Description string         `json:"description"`
	JobID       string         `json:"job_id,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// FeedbackResponse answers POST /api/v1/feedback (201).
type FeedbackResponse struct {
	ID            string `json:"id"` // fb_...
	Status        string `json:"status"`
	Type          string `json:"type"`
	Title         string `json:"title"`
	JobID         string `json:"job_id,omitempty"`
	AccountLinked bool   `json:"account_linked"` // true when a valid bearer token was sent
	CreatedAt     string `json:"created_at"`
	Message       string `json:"message"`
}
