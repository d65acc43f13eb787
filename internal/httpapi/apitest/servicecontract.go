package apitest

import (
	"sync"

	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/openapi"
)

// serviceContract memoises the service's own contract: loading and
// validating openapi.json costs about 0.2 s of CPU, and the suites make
// thousands of clients and servers (a scale-out test spent 70 % of its CPU
// reloading it). A Contract is read-only once loaded, so sharing it between
// goroutines and tests is safe; the route table is the same for every
// server.
var serviceContract = sync.OnceValues(func() (*Contract, error) {
	return LoadContract(openapi.Document, httpapi.New(httpapi.Config{}).Routes())
})

// ServiceContract returns openapi/openapi.json loaded for the service's own
// routes, loaded once per test binary.
func ServiceContract() (*Contract, error) {
	return serviceContract()
}
