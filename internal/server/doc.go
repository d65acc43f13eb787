// Package server is Skiff's composition root: the one place that builds a
// controller out of the domain services (store, auth, billing, payments,
// jobs, projects, artifacts, the fleet controller), the HTTP adapter, the
// background duties, the image builder and the local host, and that stops
// them again in the right order.
//
// `skiff server` parses its flags into a Config and runs a Server; the API
// tests (httpapi/apitest) start the same assembly. Fakes enter only at the
// seams Config names (clock, sandbox driver, x402 facilitator and chain);
// everything else is what production runs, so that a test of the
// assembled server tests what operators run.
package server
