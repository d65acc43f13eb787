package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/client"
)

// toolError is a failed call as the agent reads it: the API's envelope
// (status, error, code, recommended_action, details) and, on a 402, the
// quote to pay and what to do next.
type toolError struct {
	Status            int            `json:"status,omitempty"`
	Error             string         `json:"error"`
	Code              string         `json:"code,omitempty"`
	RecommendedAction string         `json:"recommended_action,omitempty"`
	Details           map[string]any `json:"details,omitempty"`
	Quote             any            `json:"quote,omitempty"`
	PaymentRequired   any            `json:"payment_required,omitempty"`
	NextSteps         []string       `json:"next_steps,omitempty"`
}

// errorResult turns a handler's error into a tool error (isError: true):
// the agent sees it and can act on it, where a protocol error would only
// say that the call broke.
func errorResult(err error) *sdk.CallToolResult {
	te := toolError{Error: err.Error()}
	if ce, ok := client.AsError(err); ok {
		te = toolError{Status: ce.Status, Error: ce.Envelope.Error, Code: ce.Envelope.Code,
			RecommendedAction: ce.Envelope.RecommendedAction, Details: ce.Envelope.Details}
		if ce.Status == http.StatusPaymentRequired {
			te.PaymentRequired = ce.PaymentRequired
			if ce.Quote != nil {
				te.Quote = ce.Quote
				te.NextSteps = []string{
					fmt.Sprintf("The account lacks %s USD for this request; quote %s covers it until %s.",
						ce.Quote.AmountUSD, ce.Quote.ID, ce.Quote.ExpiresAt.Format("2006-01-02T15:04:05Z07:00")),
					"Pay the quote over x402 (POST /api/v1/account/quotes/" + ce.Quote.ID + "/pay/x402 with the payment_required above, or `skiff topup` with a wallet), or top up another amount (topup_quote), or ask the operator for credit.",
					"Then call the same tool again with the same idempotency_key: the request is admitted once.",
				}
			}
		}
	}
	var text strings.Builder
	text.WriteString(err.Error())
	for _, s := range te.NextSteps {
		text.WriteString("\n" + s)
	}
	b, _ := json.MarshalIndent(te, "", "  ")
	text.WriteString("\n\n" + string(b))
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text.String()}},
		StructuredContent: te}
}
