// Package payment is the server side of the payments Skiff takes, x402 v2
// and the Machine Payments Protocol (MPP): quotes and their challenges, the
// verification of a payer's signed authorization (wire and signatures in
// paywire), the facilitator and chain behind seams, and the settlement of
// each quote exactly once.
package payment
