package httpapi

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/contact"
	"github.com/skiffhq/skiff/internal/fault"
)

// maxFeedbackBody bounds a feedback request: the longest description and
// metadata the rules allow, with room for JSON escaping.
const maxFeedbackBody = 64 << 10

// maxWaitlistBody bounds a waitlist request; an address is at most 254 bytes.
const maxWaitlistBody = 4 << 10

// waitlistJoin adds an address to the waitlist. The landing page's form
// posts here as application/x-www-form-urlencoded when JavaScript is off;
// such a post is answered with a 303 back to the page, which shows the
// outcome from the query.
func (s *Server) waitlistJoin(w http.ResponseWriter, r *http.Request) error {
	if isFormPost(r) {
		return s.waitlistForm(w, r)
	}
	if err := s.rateLimit(w, "waitlist", limitCheck{s.limits.waitlist, s.clientKey(r), "client_ip"}); err != nil {
		return err
	}
	var body struct {
		Email string `json:"email"`
	}
	if _, _, err := decodeJSONLimit(w, r, &body, false, maxWaitlistBody); err != nil {
		return err
	}
	e, _, err := s.contact.JoinWaitlist(r.Context(), body.Email)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, waitlistAnswer(e.Email))
	return nil
}

func waitlistAnswer(email string) apiv1.WaitlistResponse {
	return apiv1.WaitlistResponse{
		Status:  "on_waitlist",
		Email:   email,
		Message: "You are on the waitlist. The operator issues API keys from it and writes to this address.",
		NextAction: "No need to wait: sign in with any wallet now (POST /api/v1/auth/wallet/challenge, then /verify) " +
			"to get a session token and fund your account.",
	}
}

// waitlistForm serves the no-JavaScript form: every outcome, a refusal
// included, is a redirect to the landing page that names it.
func (s *Server) waitlistForm(w http.ResponseWriter, r *http.Request) error {
	outcome := "joined"
	if err := s.rateLimit(w, "waitlist", limitCheck{s.limits.waitlist, s.clientKey(r), "client_ip"}); err != nil {
		outcome = "rate_limited"
	} else {
		r.Body = http.MaxBytesReader(w, r.Body, maxWaitlistBody)
		if err := r.ParseForm(); err != nil {
			outcome = "invalid"
		} else if _, _, err := s.contact.JoinWaitlist(r.Context(), r.PostForm.Get("email")); err != nil {
			if !fault.Is(err, fault.KindInvalid) {
				return err
			}
			outcome = "invalid"
		}
	}
	http.Redirect(w, r, "/?"+url.Values{"waitlist": {outcome}}.Encode()+"#waitlist", http.StatusSeeOther)
	return nil
}

func isFormPost(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/x-www-form-urlencoded"
}

// feedbackSubmit stores a report. It needs no credentials; valid ones tie
// the report to their account, and invalid ones file it anonymously (the
// answer's message says the token was not recognised).
func (s *Server) feedbackSubmit(w http.ResponseWriter, r *http.Request) error {
	// The endpoint needs no auth (spec 4): a token links the report to its
	// account, and a stale, revoked or malformed one files it anonymously
	// rather than losing it (the answer says so). A store failure while
	// checking the token is still an error.
	var accountID string
	tokenIgnored := false
	if h := r.Header.Get("Authorization"); h != "" {
		p, err := s.auth.Authenticate(r.Context(), h)
		switch {
		case err == nil:
			accountID = p.Account.ID
		case fault.Is(err, fault.KindUnauthenticated):
			tokenIgnored = true
		default:
			return err
		}
	}
	// A linked report is limited per account, an anonymous one per client
	// address: the MCP tools send feedback from the server's own loopback
	// address for every agent, and must not share one bucket.
	check := limitCheck{s.limits.feedback, s.clientKey(r), "client_ip"}
	if accountID != "" {
		check = limitCheck{s.limits.feedback, "account:" + accountID, "account"}
	}
	if err := s.rateLimit(w, "feedback", check); err != nil {
		return err
	}
	var body struct {
		Type        string          `json:"type"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		JobID       string          `json:"job_id"`
		Metadata    json.RawMessage `json:"metadata"`
	}
	if _, _, err := decodeJSONLimit(w, r, &body, false, maxFeedbackBody); err != nil {
		return err
	}
	f, err := s.contact.SubmitFeedback(r.Context(), contact.FeedbackInput{Type: body.Type, Title: body.Title,
		Description: body.Description, JobID: body.JobID, Metadata: body.Metadata, AccountID: accountID})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, apiv1.FeedbackResponse{
		ID: f.ID, Status: "received", Type: string(f.Type), Title: f.Title, JobID: f.JobID,
		AccountLinked: f.AccountID != "", CreatedAt: f.CreatedAt.UTC().Format(time.RFC3339),
		Message: feedbackMessage(tokenIgnored),
	})
	return nil
}

// feedbackMessage thanks the reporter, and tells one whose token was not
// recognised that the report was filed without an account.
func feedbackMessage(tokenIgnored bool) string {
	const thanks = "Thank you. The operator reads every report; there is no reply channel here, so include how to reach you if you want one."
	if tokenIgnored {
		return "Your bearer token was not recognised (expired, revoked or malformed), so this report was filed anonymously. " + thanks
	}
	return thanks
}
