package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/apiv1"
)

type topupInput struct {
	AmountUSD   string `json:"amount_usd" jsonschema:"the amount to add, a decimal string such as \"25\" or \"0.50\""`
	Description string `json:"description,omitempty" jsonschema:"kept with the quote"`
}

type feedbackInput struct {
	Type        string `json:"type" jsonschema:"bug, feature_request, provisioning or job_type_request"`
	Title       string `json:"title" jsonschema:"one line"`
	Description string `json:"description" jsonschema:"what happened and what you expected"`
	JobID       string `json:"job_id,omitempty" jsonschema:"the job it is about, if any"`
}

func (t *Tools) addAccountTools(s *sdk.Server, sess Session) {
	c := sess.Client
	add(t, s, reads, "balance", "Balance",
		"The account's balance: ledger, held by running jobs, available (GET /api/v1/account/balance).",
		func(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (any, error) {
			return c.Balance(ctx)
		})
	add(t, s, retries, "topup_quote", "Top-up quote",
		"Ask for a quote to add amount_usd to the balance (POST /api/v1/account/quotes/topup). It returns the quote and the "+
			"x402 payment requirements; pay it with a wallet (`skiff topup`, or POST /api/v1/account/quotes/{id}/pay/x402).",
		func(ctx context.Context, _ *sdk.CallToolRequest, in topupInput) (any, error) {
			q, pr, err := c.TopupQuote(ctx, in.AmountUSD, in.Description)
			if err != nil {
				return nil, err
			}
			return map[string]any{"quote": q, "payment_required": pr,
				"next_action": "Pay quote " + q.ID + " over x402: POST " + sess.publicURL() + "/api/v1/account/quotes/" + q.ID +
					"/pay/x402 with an X-PAYMENT header signed for payment_required, or run `skiff topup " + in.AmountUSD + "` with a wallet."}, nil
		})
	add(t, s, writes, "send_feedback", "Send feedback",
		"Report a bug, ask for a feature, a job type or capacity (POST /api/v1/feedback); the report is tied to the account.",
		func(ctx context.Context, _ *sdk.CallToolRequest, in feedbackInput) (any, error) {
			return c.Feedback(ctx, &apiv1.FeedbackRequest{Type: in.Type, Title: in.Title, Description: in.Description, JobID: in.JobID})
		})
}
