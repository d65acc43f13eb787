package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"
)

// pages walks a limit/offset list: fetch returns one page's items and the
// total; the walk stops at the total, at a short page or at an error.
func pages[T any](ctx context.Context, c *Client, q url.Values, limit int, fetch func(ctx context.Context, q url.Values) ([]T, int, error)) iter.Seq2[T, error] {
	if c.pageSize > 0 {
		limit = c.pageSize
	}
	return func(yield func(T, error) bool) {
		offset := 0
		for {
			pq := url.Values{}
			for k, v := range q {
				pq[k] = v
			}
			pq.Set("limit", strconv.Itoa(limit))
			pq.Set("offset", strconv.Itoa(offset))
			items, total, err := fetch(ctx, pq)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			offset += len(items)
			if len(items) == 0 || len(items) < limit || offset >= total {
				return
			}
		}
	}
}

// Collect gathers an iterator's items, stopping at the first error.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}
