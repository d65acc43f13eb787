package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/skiffhq/skiff/internal/httpapi"
)

// Contract is openapi/openapi.json, loaded, validated and routed, so that
// requests and responses can be checked against it.
type Contract struct {
	Doc    *openapi3.T
	router routers.Router
	// rest matches the operations whose last path parameter may hold '/'
	// (net/http {key...} patterns), which gorilla/mux cannot express.
	rest []restRoute
}

type restRoute struct {
	template string // OpenAPI path, e.g. /api/v1/projects/{name}/kv/{key}
	re       *regexp.Regexp
	params   []string
}

// LoadContract parses and validates an OpenAPI 3.1 document. routes is the
// server's route table; it tells which parameters capture the rest of the
// path.
func LoadContract(doc []byte, routes []httpapi.Route) (*Contract, error) {
	loader := openapi3.NewLoader()
	d, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	if !d.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("openapi document is version %q, want 3.1", d.OpenAPI)
	}
	if err := d.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("validate openapi document: %w", err)
	}
	r, err := gorillamux.NewRouter(d)
	if err != nil {
		return nil, fmt.Errorf("route openapi document: %w", err)
	}
	c := &Contract{Doc: d, router: r}
	for _, rt := range routes {
		if !strings.HasSuffix(rt.Pattern, "...}") {
			continue
		}
		tmpl := Template(rt.Pattern)
		if c.Doc.Paths.Value(tmpl) == nil {
			continue // the contract test reports it
		}
		expr := "^"
		var params []string
		segs := strings.Split(strings.TrimPrefix(tmpl, "/"), "/")
		for i, seg := range segs {
			expr += "/"
			if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
				params = append(params, seg[1:len(seg)-1])
				if i == len(segs)-1 {
					expr += "(.+)"
				} else {
					expr += "([^/]+)"
				}
				continue
			}
			expr += regexp.QuoteMeta(seg)
		}
		c.rest = append(c.rest, restRoute{template: tmpl, re: regexp.MustCompile(expr + "$"), params: params})
	}
	return c, nil
}

var restParam = regexp.MustCompile(`\{([A-Za-z0-9_]+)\.\.\.\}`)

// Template turns a net/http pattern into its OpenAPI path template:
// /api/v1/projects/{name}/kv/{key...} becomes /api/v1/projects/{name}/kv/{key}.
func Template(pattern string) string {
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pattern = p
	}
	// "/{$}" matches only "/" itself: the document's path is "/".
	pattern = strings.TrimSuffix(pattern, "{$}")
	return restParam.ReplaceAllString(pattern, "{$1}")
}

// FindRoute finds the described operation a request targets. HEAD resolves
// to the GET operation, as the server answers HEAD wherever it answers GET.
// The errors are routers.ErrPathNotFound and routers.ErrMethodNotAllowed.
func (c *Contract) FindRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	if req.Method == http.MethodHead {
		get := req.Clone(req.Context())
		get.Method = http.MethodGet
		req = get
	}
	route, params, err := c.router.FindRoute(req)
	if !errors.Is(err, routers.ErrPathNotFound) {
		return route, params, err
	}
	for _, rr := range c.rest {
		m := rr.re.FindStringSubmatch(req.URL.EscapedPath())
		if m == nil {
			continue
		}
		item := c.Doc.Paths.Value(rr.template)
		op := item.GetOperation(req.Method)
		if op == nil {
			return nil, nil, routers.ErrMethodNotAllowed
		}
		params := map[string]string{}
		for i, name := range rr.params {
			params[name] = m[i+1]
		}
		return &routers.Route{Spec: c.Doc, Path: rr.template, PathItem: item, Method: req.Method, Operation: op}, params, nil
	}
	return nil, nil, routers.ErrPathNotFound
}

// ValidateRequest checks a request against its operation. The request body
// is read and restored.
func (c *Contract) ValidateRequest(ctx context.Context, req *http.Request) error {
	route, params, err := c.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	body, err := peekBody(req)
	if err != nil {
		return err
	}
	defer func() { req.Body = io.NopCloser(bytes.NewReader(body)) }()
	return openapi3filter.ValidateRequest(ctx, c.requestInput(req, route, params))
}

func (c *Contract) requestInput(req *http.Request, route *routers.Route, params map[string]string) *openapi3filter.RequestValidationInput {
	return &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			AuthenticationFunc:  bearerAuth,
			MultiError:          true,
			SkipSettingDefaults: true,
		},
	}
}

// bearerAuth accepts a request that carries 'Authorization: Bearer <token>'.
// Whether the token is any good is the server's business.
func bearerAuth(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s := in.SecurityScheme
	if s == nil || s.Type != "http" || !strings.EqualFold(s.Scheme, "bearer") {
		return in.NewError(fmt.Errorf("unsupported security scheme %q", in.SecuritySchemeName))
	}
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return in.NewError(errors.New("no bearer token"))
	}
	return nil
}

// ValidateResponse checks a response against the request's operation: the
// status must be described, and the body must match its schema. A request
// that matches no operation (unknown path, wrong method) must have been
// answered with the error envelope. A HEAD answer must have a status the GET
// operation describes, and no body.
func (c *Contract) ValidateResponse(ctx context.Context, req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := c.FindRoute(req)
	if err != nil {
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s %s matches no described operation (%v), yet answered %d", req.Method, req.URL.Path, err, status)
		}
		return c.ValidateEnvelope(header, body)
	}
	if req.Method == http.MethodHead {
		if route.Operation.Responses.Status(status) == nil && route.Operation.Responses.Default() == nil {
			return fmt.Errorf("HEAD %s answered %d, which GET %s does not describe", req.URL.Path, status, route.Path)
		}
		if len(body) != 0 {
			return fmt.Errorf("HEAD %s answered a %d-byte body, want none", req.URL.Path, len(body))
		}
		return nil
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	// kin-openapi decodes only the media types it knows; for the others
	// (text/markdown, text/html) the body is not checked, but its media type
	// must be one the operation describes.
	ct := header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && openapi3filter.RegisteredBodyDecoder(mt) == nil {
		opts.ExcludeResponseBody = true
		if resp := route.Operation.Responses.Status(status); resp != nil && resp.Value != nil &&
			len(resp.Value.Content) > 0 && resp.Value.Content.Get(ct) == nil {
			return fmt.Errorf("%s %s -> %d has Content-Type %q, which operation %s does not describe", req.Method,
				req.URL.Path, status, ct, route.Operation.OperationID)
		}
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: c.requestInput(req, route, params),
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                opts,
	}
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil {
		return fmt.Errorf("%s %s -> %d does not match operation %s: %w", req.Method, req.URL.Path, status,
			route.Operation.OperationID, err)
	}
	return nil
}

// ValidateEnvelope checks a failure body against components/schemas/Error.
func (c *Contract) ValidateEnvelope(header http.Header, body []byte) error {
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("error answer has Content-Type %q, want application/json", ct)
	}
	ref := c.Doc.Components.Schemas["Error"]
	if ref == nil || ref.Value == nil {
		return errors.New("openapi document has no components/schemas/Error")
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("error answer is not JSON: %w: %q", err, body)
	}
	if err := ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("error answer does not match components/schemas/Error: %w", err)
	}
	return nil
}

func peekBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

// Operation is one described operation: an HTTP method and an OpenAPI path.
type Operation struct{ Method, Path string }

func (o Operation) String() string { return o.Method + " " + o.Path }

// Operations lists the document's operations.
func (c *Contract) Operations() []Operation {
	var out []Operation
	for _, path := range c.Doc.Paths.InMatchingOrder() {
		for method := range c.Doc.Paths.Value(path).Operations() {
			out = append(out, Operation{strings.ToUpper(method), path})
		}
	}
	return out
}

// Operation returns the operation a route serves, or nil.
func (c *Contract) Operation(rt httpapi.Route) *openapi3.Operation {
	item := c.Doc.Paths.Value(Template(rt.Pattern))
	if item == nil {
		return nil
	}
	return item.GetOperation(rt.Method)
}

// IsPublic reports whether the document lets op be called without
// credentials (an empty security list, or none at all in a document without
// a global requirement).
func (c *Contract) IsPublic(op *openapi3.Operation) bool {
	sec := c.Doc.Security
	if op.Security != nil {
		sec = *op.Security
	}
	if len(sec) == 0 {
		return true
	}
	for _, req := range sec {
		if len(req) == 0 { // {} makes credentials optional
			return true
		}
	}
	return false
}

// RouteMismatches compares a route table with the document. It names each
// route without a described operation and each described operation without
// a route. GET routes imply HEAD, so a described HEAD needs a GET route.
func (c *Contract) RouteMismatches(routes []httpapi.Route) []string {
	served := map[Operation]bool{}
	var out []string
	for _, rt := range routes {
		op := Operation{rt.Method, Template(rt.Pattern)}
		served[op] = true
		if rt.Method == http.MethodGet {
			served[Operation{http.MethodHead, op.Path}] = true
		}
		if c.Operation(rt) == nil {
			out = append(out, fmt.Sprintf("route %s %s has no operation %s in openapi.json", rt.Method, rt.Pattern, op))
		}
	}
	for _, op := range c.Operations() {
		if !served[op] {
			out = append(out, fmt.Sprintf("operation %s in openapi.json has no route", op))
		}
	}
	return out
}
