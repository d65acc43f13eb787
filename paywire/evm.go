// Package paywire is the wire of the payments Skiff takes, shared by the
// server (internal/payment) and the public Go client: the x402 v2 and
// Machine Payments Protocol (MPP) headers and payloads, and the EVM
// signatures both rest on (EIP-191 personal_sign for wallet sign-in, EIP-712
// TransferWithAuthorization for EIP-3009 payments). It is a leaf: it imports
// nothing of Skiff's, so the client can be used without the server.
package paywire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"golang.org/x/crypto/sha3"
)

// Address is a 20-byte EVM account address. Addresses are compared as
// bytes: the checksummed and lower-case spellings of one address are equal.
type Address [20]byte

// ParseAddress reads "0x" and 40 hex digits, in any letter case.
func ParseAddress(s string) (Address, error) {
	var a Address
	if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") {
		return a, fmt.Errorf("address %q is not 0x followed by 40 hex digits", s)
	}
	if _, err := hex.Decode(a[:], []byte(s[2:])); err != nil {
		return a, fmt.Errorf("address %q is not 0x followed by 40 hex digits", s)
	}
	return a, nil
}

// Hex is the lower-case 0x spelling.
func (a Address) Hex() string { return "0x" + hex.EncodeToString(a[:]) }

// Checksum is the EIP-55 mixed-case spelling.
func (a Address) Checksum() string {
	low := hex.EncodeToString(a[:])
	h := Keccak256([]byte(low))
	out := []byte(low)
	for i, c := range out {
		if c >= 'a' && c <= 'f' {
			nib := h[i/2]
			if i%2 == 0 {
				nib >>= 4
			}
			if nib&0x0f >= 8 {
				out[i] = c - 'a' + 'A'
			}
		}
	}
	return "0x" + string(out)
}

// Keccak256 is Ethereum's hash (the pre-standard Keccak, not SHA3-256).
func Keccak256(parts ...[]byte) []byte {
	h := sha3.NewLegacyKeccak256()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// PersonalMessageHash is the EIP-191 version 0x45 hash that personal_sign
// (viem's signMessage) signs.
func PersonalMessageHash(msg []byte) []byte {
	return Keccak256([]byte("\x19Ethereum Signed Message:\n"+strconv.Itoa(len(msg))), msg)
}

// Signature errors.
var (
	ErrSignatureMalformed = errors.New("signature must be 0x followed by 65 bytes (r, s, v) in hex")
	ErrSignatureHighS     = errors.New("signature s value is in the upper half of the curve order (malleable)")
	ErrSignatureInvalid   = errors.New("signature does not recover to a public key")
)

// ParseSignature reads a 0x-prefixed 65-byte r||s||v signature.
func ParseSignature(s string) ([]byte, error) {
	if len(s) != 2+130 || (s[:2] != "0x" && s[:2] != "0X") {
		return nil, ErrSignatureMalformed
	}
	b, err := hex.DecodeString(s[2:])
	if err != nil {
		return nil, ErrSignatureMalformed
	}
	return b, nil
}

// Recover returns the address whose key made sig (65 bytes r||s||v, v in
// 27/28 or 0/1) over hash. A high-s signature is refused: every valid
// signature has a low-s twin, and accepting both would let one
// authorization be spelled two ways.
func Recover(hash, sig []byte) (Address, error) {
	var a Address
	if len(sig) != 65 || len(hash) != 32 {
		return a, ErrSignatureMalformed
	}
	v := sig[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 {
		return a, ErrSignatureMalformed
	}
	var s secp256k1.ModNScalar
	if overflow := s.SetByteSlice(sig[32:64]); overflow {
		return a, ErrSignatureInvalid
	}
	if s.IsOverHalfOrder() {
		return a, ErrSignatureHighS
	}
	compact := make([]byte, 65)
	compact[0] = 27 + v // uncompressed key
	copy(compact[1:], sig[:64])
	pub, _, err := ecdsa.RecoverCompact(compact, hash)
	if err != nil {
		return a, ErrSignatureInvalid
	}
	return PubkeyAddress(pub), nil
}

// PubkeyAddress is the address of a public key: the last 20 bytes of the
// Keccak-256 of its uncompressed X||Y.
func PubkeyAddress(pub *secp256k1.PublicKey) Address {
	var a Address
	copy(a[:], Keccak256(pub.SerializeUncompressed()[1:])[12:])
	return a
}

// RecoverPersonal returns the address that personal_sign-ed msg with sig.
func RecoverPersonal(msg []byte, sigHex string) (Address, error) {
	sig, err := ParseSignature(sigHex)
	if err != nil {
		return Address{}, err
	}
	return Recover(PersonalMessageHash(msg), sig)
}

// Domain is the EIP-712 domain of an EIP-3009 token.
type Domain struct {
	Name, Version     string
	ChainID           int64
	VerifyingContract Address
}

// Authorization is an EIP-3009 TransferWithAuthorization, the message both
// x402's exact scheme and MPP's evm charge sign.
type Authorization struct {
	From, To                       Address
	Value, ValidAfter, ValidBefore *big.Int
	Nonce                          [32]byte
}

var (
	domainTypeHash = Keccak256([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	twaTypeHash    = Keccak256([]byte("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"))
)

func word(b []byte) []byte {
	out := make([]byte, 32)
	copy(out[32-len(b):], b)
	return out
}

func uintWord(n *big.Int) []byte {
	if n == nil || n.Sign() < 0 || n.BitLen() > 256 {
		// Parsing refuses these; a zero word keeps the hash well defined.
		return make([]byte, 32)
	}
	return word(n.Bytes())
}

// Separator is the EIP-712 domain separator.
func (d Domain) Separator() []byte {
	return Keccak256(domainTypeHash, Keccak256([]byte(d.Name)), Keccak256([]byte(d.Version)),
		uintWord(big.NewInt(d.ChainID)), word(d.VerifyingContract[:]))
}

// TypedDataHash is the EIP-712 digest of a TransferWithAuthorization under d
// (viem's hashTypedData).
func (d Domain) TypedDataHash(a *Authorization) []byte {
	structHash := Keccak256(twaTypeHash, word(a.From[:]), word(a.To[:]), uintWord(a.Value),
		uintWord(a.ValidAfter), uintWord(a.ValidBefore), a.Nonce[:])
	return Keccak256([]byte{0x19, 0x01}, d.Separator(), structHash)
}

// VerifyAuthorization checks that sig is the authorization's sender's
// EIP-712 signature under d.
func (d Domain) VerifyAuthorization(a *Authorization, sigHex string) error {
	sig, err := ParseSignature(sigHex)
	if err != nil {
		return err
	}
	got, err := Recover(d.TypedDataHash(a), sig)
	if err != nil {
		return err
	}
	if !bytes.Equal(got[:], a.From[:]) {
		return fmt.Errorf("signature was made by %s, not by the authorization's sender %s", got.Checksum(), a.From.Checksum())
	}
	return nil
}

// ParseUint256 reads a non-negative decimal integer of at most 256 bits.
func ParseUint256(s string) (*big.Int, error) {
	if s == "" || len(s) > 78 || strings.TrimLeft(s, "0123456789") != "" {
		return nil, fmt.Errorf("%q is not a non-negative decimal integer", s)
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.BitLen() > 256 {
		return nil, fmt.Errorf("%q is not a 256-bit unsigned integer", s)
	}
	return n, nil
}

// ParseBytes32 reads 0x and 64 hex digits.
func ParseBytes32(s string) ([32]byte, error) {
	var b [32]byte
	if len(s) != 66 || (s[:2] != "0x" && s[:2] != "0X") {
		return b, fmt.Errorf("%q is not 0x followed by 64 hex digits", s)
	}
	if _, err := hex.Decode(b[:], []byte(s[2:])); err != nil {
		return b, fmt.Errorf("%q is not 0x followed by 64 hex digits", s)
	}
	return b, nil
}

// ChallengeHash is MPP's binding of an EIP-3009 nonce to a challenge:
// keccak256(utf8(id || realm)).
func ChallengeHash(id, realm string) [32]byte {
	var b [32]byte
	copy(b[:], Keccak256([]byte(id+realm)))
	return b
}

// Decode parses the authorization's strings into its EVM values.
func (a EVMAuthorization) Decode() (Authorization, error) {
	var out Authorization
	var err error
	if out.From, err = ParseAddress(a.From); err != nil {
		return out, fmt.Errorf("from: %w", err)
	}
	if out.To, err = ParseAddress(a.To); err != nil {
		return out, fmt.Errorf("to: %w", err)
	}
	if out.Value, err = ParseUint256(a.Value); err != nil {
		return out, fmt.Errorf("value: %w", err)
	}
	if out.ValidAfter, err = ParseUint256(a.ValidAfter); err != nil {
		return out, fmt.Errorf("validAfter: %w", err)
	}
	if out.ValidBefore, err = ParseUint256(a.ValidBefore); err != nil {
		return out, fmt.Errorf("validBefore: %w", err)
	}
	if out.Nonce, err = ParseBytes32(a.Nonce); err != nil {
		return out, fmt.Errorf("nonce: %w", err)
	}
	return out, nil
}
