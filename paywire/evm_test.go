package paywire

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// vectors were produced by viem (test/payments/vectors.mjs).
type vectors struct {
	Address  string
	Personal struct{ Message, Hash, Signature string }
	Typed    struct {
		Domain struct {
			Name, Version     string
			ChainID           int64 `json:"chainId"`
			VerifyingContract string
		}
		Message         map[string]string
		Hash, Signature string
	}
	ChallengeHash struct{ ID, Realm, Hash string }
}

func loadVectors(t *testing.T) *vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/viem_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPersonalSignMatchesViem(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	if got := "0x" + hex.EncodeToString(PersonalMessageHash([]byte(v.Personal.Message))); got != v.Personal.Hash {
		t.Errorf("hash: got %s, want %s", got, v.Personal.Hash)
	}
	addr, err := RecoverPersonal([]byte(v.Personal.Message), v.Personal.Signature)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ParseAddress(v.Address)
	if addr != want {
		t.Errorf("recovered %s, want %s", addr.Checksum(), v.Address)
	}
	if addr.Checksum() != v.Address {
		t.Errorf("checksum spelling %s, want %s", addr.Checksum(), v.Address)
	}
	// v as 0/1 recovers the same address.
	sig := mustHex(t, v.Personal.Signature)
	sig[64] -= 27
	if got, err := Recover(PersonalMessageHash([]byte(v.Personal.Message)), sig); err != nil || got != want {
		t.Errorf("v in 0/1: got %s, %v; want %s", got.Checksum(), err, v.Address)
	}
	// Another message recovers another address.
	if got, _ := RecoverPersonal([]byte(v.Personal.Message+"x"), v.Personal.Signature); got == want {
		t.Error("a changed message recovered the signer")
	}
}

func TestHighSRefused(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	sig := mustHex(t, v.Personal.Signature)
	// The malleable twin: s' = n - s, v flipped.
	var s secp256k1.ModNScalar
	s.SetByteSlice(sig[32:64])
	s.Negate()
	b := s.Bytes()
	copy(sig[32:64], b[:])
	sig[64] = 27 + (1 - (sig[64] - 27))
	if _, err := Recover(PersonalMessageHash([]byte(v.Personal.Message)), sig); !errors.Is(err, ErrSignatureHighS) {
		t.Errorf("high-s twin: got %v, want ErrSignatureHighS", err)
	}
}

func TestTransferWithAuthorizationMatchesViem(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	contract, _ := ParseAddress(v.Typed.Domain.VerifyingContract)
	d := Domain{Name: v.Typed.Domain.Name, Version: v.Typed.Domain.Version, ChainID: v.Typed.Domain.ChainID, VerifyingContract: contract}
	a, err := EVMAuthorization{From: v.Typed.Message["from"], To: v.Typed.Message["to"], Value: v.Typed.Message["value"],
		ValidAfter: v.Typed.Message["validAfter"], ValidBefore: v.Typed.Message["validBefore"], Nonce: v.Typed.Message["nonce"]}.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if got := "0x" + hex.EncodeToString(d.TypedDataHash(&a)); got != v.Typed.Hash {
		t.Errorf("typed data hash: got %s, want %s", got, v.Typed.Hash)
	}
	if err := d.VerifyAuthorization(&a, v.Typed.Signature); err != nil {
		t.Errorf("viem's signature: %v", err)
	}
	tampered := a
	tampered.Value = big.NewInt(1500001)
	if err := d.VerifyAuthorization(&tampered, v.Typed.Signature); err == nil {
		t.Error("a tampered value verified")
	}
	other := d
	other.ChainID = 84532
	if err := other.VerifyAuthorization(&a, v.Typed.Signature); err == nil {
		t.Error("the signature verified under another chain id")
	}
}

func TestChallengeHashMatchesMppx(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	h := ChallengeHash(v.ChallengeHash.ID, v.ChallengeHash.Realm)
	if got := "0x" + hex.EncodeToString(h[:]); got != v.ChallengeHash.Hash {
		t.Errorf("got %s, want %s", got, v.ChallengeHash.Hash)
	}
}

func TestDecodersRefuseBadInput(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]string{
		"not base64":     "%%%",
		"url alphabet":   "eyJ4NDAy_-",
		"truncated json": EncodeStd(map[string]any{"x402Version": 2})[:10],
		"wrong version":  EncodeStd(map[string]any{"x402Version": 1}),
		"oversize":       strings.Repeat("A", MaxHeaderBytes+4),
	} {
		if _, err := DecodePaymentSignature(h); err == nil {
			t.Errorf("%s: PAYMENT-SIGNATURE decoded, want an error", name)
		}
	}
	for name, h := range map[string]string{
		"not base64": "***",
		"no id":      EncodeURL(map[string]any{"challenge": map[string]any{}}),
		"not json":   base64URL([]byte("{\"challenge\":")),
		"oversize":   strings.Repeat("A", MaxHeaderBytes+4),
	} {
		if _, err := DecodeMPPCredential(h); err == nil {
			t.Errorf("%s: MPP credential decoded, want an error", name)
		}
	}
}

func FuzzDecodePaymentSignature(f *testing.F) {
	f.Add(EncodeStd(PaymentPayload{X402Version: 2}))
	f.Add("e30=")
	f.Add("")
	f.Fuzz(func(t *testing.T, h string) {
		p, err := DecodePaymentSignature(h)
		if err == nil && p.X402Version != 2 {
			t.Fatalf("decoded version %d", p.X402Version)
		}
		if err == nil {
			_, _ = p.Payload.Authorization.Decode()
		}
	})
}

func FuzzDecodeMPPCredential(f *testing.F) {
	f.Add(EncodeURL(MPPCredential{Challenge: MPPChallenge{ID: "qt_x"}}))
	f.Add("e30")
	f.Fuzz(func(t *testing.T, h string) {
		c, err := DecodeMPPCredential(h)
		if err == nil && c.Challenge.ID == "" {
			t.Fatal("decoded a credential without a challenge id")
		}
		if _, ok := MPPCredentialFrom("Payment " + h); !ok {
			t.Fatal("Payment scheme not recognised")
		}
	})
}
