package payment

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/skiffhq/skiff/paywire"
)

// Chain reads what the token contract recorded. It is the truth when a
// facilitator's answer was lost: the reference facilitator (@x402/evm)
// answers a repeated /settle of a payment it already executed with
// invalid_exact_evm_nonce_already_used, not with its transaction, so a
// service killed between the facilitator's settlement and its own credit
// learns on restart only from the chain that the payment went through.
type Chain interface {
	// Paid returns the hash of the transaction in which asset used
	// authorizer's EIP-3009 nonce (AuthorizationUsed) and moved value from
	// authorizer to payTo (Transfer), or "" when there is none: the nonce
	// is unused, was cancelled, or paid someone else under another
	// authorization signed with the same nonce.
	Paid(ctx context.Context, asset, authorizer, payTo paywire.Address, value *big.Int, nonce [32]byte) (string, error)
}

// nonceUsed reports whether a declined settlement says that the
// authorization's nonce is already spent on the chain.
func nonceUsed(res *paywire.SettleResponse) bool {
	return strings.Contains(res.ErrorReason, "nonce_already_used") ||
		strings.Contains(res.ErrorMessage, "authorization is used")
}

// usedOnChain looks up whether the authorization of settlement request
// raw was executed on the chain; it returns the settle answer the
// facilitator would have given, nil when it was not executed.
func (s *Service) usedOnChain(ctx context.Context, raw []byte) (*paywire.SettleResponse, error) {
	var req FacilitatorRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("settlement request: %w", err)
	}
	var p paywire.PaymentPayload
	if err := json.Unmarshal(req.PaymentPayload, &p); err != nil {
		return nil, fmt.Errorf("settlement payload: %w", err)
	}
	a := p.Payload.Authorization
	asset, err := paywire.ParseAddress(req.PaymentRequirements.Asset)
	if err != nil {
		return nil, fmt.Errorf("settlement asset: %w", err)
	}
	from, err := paywire.ParseAddress(a.From)
	if err != nil {
		return nil, fmt.Errorf("settlement payer: %w", err)
	}
	to, err := paywire.ParseAddress(a.To)
	if err != nil {
		return nil, fmt.Errorf("settlement payee: %w", err)
	}
	value, err := paywire.ParseUint256(a.Value)
	if err != nil {
		return nil, fmt.Errorf("settlement value: %w", err)
	}
	nonce, err := paywire.ParseBytes32(a.Nonce)
	if err != nil {
		return nil, fmt.Errorf("settlement nonce: %w", err)
	}
	tx, err := s.chain.Paid(ctx, asset, from, to, value, nonce)
	if err != nil || tx == "" {
		return nil, err
	}
	return &paywire.SettleResponse{Success: true, Payer: a.From, Transaction: tx, Network: req.PaymentRequirements.Network,
		Amount: a.Value}, nil
}

// TransferTopic is the log topic of ERC-20's Transfer(address indexed
// from, address indexed to, uint256 value).
func TransferTopic() string {
	return "0x" + hex.EncodeToString(paywire.Keccak256([]byte("Transfer(address,address,uint256)")))
}

// AuthorizationUsedTopic is the log topic of EIP-3009's
// AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce).
func AuthorizationUsedTopic() string {
	return "0x" + hex.EncodeToString(paywire.Keccak256([]byte("AuthorizationUsed(address,bytes32)")))
}
