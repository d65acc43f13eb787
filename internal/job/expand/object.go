package expand

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// field is one member of a JSON object: its key, the key already encoded as
// a JSON string, and its compact value.
type field struct {
	key string
	kj  []byte
	val []byte
}

// object is a JSON object as fields sorted by key, each key once.
type object []field

// parseObject reads raw as a JSON object (nil or null is {}), compacting its
// values. where names the submission field for errors.
func parseObject(where string, raw json.RawMessage) (object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, fieldErr(where, "must be a JSON object")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fieldErr(where, "is not valid JSON")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(compact.Bytes(), &m); err != nil {
		return nil, fieldErr(where, "must be a JSON object")
	}
	o := make(object, 0, len(m))
	for k, v := range m {
		o = append(o, field{key: k, kj: jsonKey(k), val: v})
	}
	return sortFields(o), nil
}

// sortFields sorts o by key in place and returns it; on a repeated key the
// later field wins.
func sortFields(o object) object {
	slices.SortStableFunc(o, func(a, b field) int { return strings.Compare(a.key, b.key) })
	out := o[:0]
	for i, f := range o {
		if i+1 < len(o) && o[i+1].key == f.key {
			continue
		}
		out = append(out, f)
	}
	return out
}

// size is the bytes o takes written out: its keys and values, a colon and
// a comma each, and the braces.
func (o object) size() int64 {
	n := int64(2)
	for _, f := range o {
		n += int64(len(f.kj) + len(f.val) + 2)
	}
	return n
}

func (o object) get(key string) ([]byte, bool) {
	i, ok := slices.BinarySearchFunc(o, key, func(f field, k string) int { return strings.Compare(f.key, k) })
	if !ok {
		return nil, false
	}
	return o[i].val, true
}

// without returns o less key, sharing nothing with o that it would change.
func (o object) without(key string) object {
	i, ok := slices.BinarySearchFunc(o, key, func(f field, k string) int { return strings.Compare(f.key, k) })
	if !ok {
		return o
	}
	return slices.Delete(slices.Clone(o), i, i+1)
}

// appendObject writes the union of layers as one JSON object with sorted
// keys; on a key present in several layers the last layer wins. It merges
// the already sorted layers in one pass, so its cost is the size of the
// output.
func appendObject(dst []byte, layers ...object) []byte {
	var heads [4]int
	if len(layers) > len(heads) {
		panic("expand: too many payload layers")
	}
	dst = append(dst, '{')
	first := true
	for {
		var key string
		found := false
		for l, o := range layers {
			if h := heads[l]; h < len(o) && (!found || o[h].key < key) {
				key, found = o[h].key, true
			}
		}
		if !found {
			break
		}
		var win field
		for l, o := range layers {
			if h := heads[l]; h < len(o) && o[h].key == key {
				win = o[h]
				heads[l]++
			}
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, win.kj...)
		dst = append(dst, ':')
		dst = append(dst, win.val...)
	}
	return append(dst, '}')
}

// jsonKey encodes key as a JSON string.
func jsonKey(key string) []byte {
	b, _ := json.Marshal(key) // a string always encodes
	return b
}
