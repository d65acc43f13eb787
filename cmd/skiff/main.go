// Command skiff is the whole service in one binary: the server, the host
// agent, operator commands and the client.
package main

import (
	"context"
	"os"

	"github.com/skiffhq/skiff/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
