package apiv1

import (
	"bytes"
	"fmt"
	"strconv"
)

// USD is an amount of money in micro-USD (1e-6 USD, USDC's base unit),
// rendered in JSON as a number of dollars with at most 6 decimals. It is
// never a float inside the service.
type USD int64

// MarshalJSON writes the exact decimal, e.g. 12.5 or 0.000001.
func (u USD) MarshalJSON() ([]byte, error) {
	return []byte(u.String()), nil
}

// String renders the amount as a decimal number of dollars.
func (u USD) String() string {
	v := int64(u)
	sign := ""
	if v < 0 {
		sign = "-"
		v = -v
	}
	whole, frac := v/1_000_000, v%1_000_000
	if frac == 0 {
		return sign + strconv.FormatInt(whole, 10)
	}
	s := fmt.Sprintf("%s%d.%06d", sign, whole, frac)
	return string(bytes.TrimRight([]byte(s), "0"))
}

// UnmarshalJSON accepts a JSON number of dollars with at most 6 decimals.
func (u *USD) UnmarshalJSON(b []byte) error {
	v, err := ParseUSD(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// ParseUSD parses a decimal number of dollars ("12", "0.01", "1e1" is
// refused) into micro-USD, exactly, without going through a float.
func ParseUSD(s string) (USD, error) {
	bad := fmt.Errorf("amount %q must be a decimal number of USD with at most 6 decimals", s)
	if s == "" || len(s) > 24 {
		return 0, bad
	}
	neg := false
	if s[0] == '-' {
		neg = true
		s = s[1:]
	}
	intPart, fracPart, hasDot := s, "", false
	if i := bytes.IndexByte([]byte(s), '.'); i >= 0 {
		intPart, fracPart, hasDot = s[:i], s[i+1:], true
	}
	if intPart == "" || (hasDot && fracPart == "") || len(fracPart) > 6 || !digits(intPart) || !digits(fracPart) {
		return 0, bad
	}
	if len(intPart) > 12 { // a trillion dollars is out of range for any amount here
		return 0, bad
	}
	whole, _ := strconv.ParseInt(intPart, 10, 64)
	for len(fracPart) < 6 {
		fracPart += "0"
	}
	frac, _ := strconv.ParseInt(fracPart, 10, 64)
	v := whole*1_000_000 + frac
	if neg {
		v = -v
	}
	return USD(v), nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
