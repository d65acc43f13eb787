package billing

// RateWithoutGPUs is rate, the billed rate of capacity c, less its GPUs'
// share, for an attempt whose sandbox had no GPU attached (a host that
// could not attach one): the GPU rate is charged only for GPUs a task had.
// The share is the GPUs' part of c's market rate at r; a rate that holds no
// GPU comes back unchanged.
func RateWithoutGPUs(rate int64, r Rates, c Capacity) int64 {
	full := r.MarketMicrosPerHour(c)
	if c.GPUs <= 0 || full <= 0 {
		return rate
	}
	c.GPUs = 0
	return ceilDiv(rate*r.MarketMicrosPerHour(c), full)
}
