// Command hello is the smallest Skiff runner: it reads the task's payload,
// reports progress, and writes a JSON result. It is built static
// (CGO_ENABLED=0) so that it runs in a FROM scratch image, which has no libc.
package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// payload is what a job sends, e.g. {"name": "Ada", "repeat": 3}.
type payload struct {
	Name   string `json:"name"`
	Repeat int    `json:"repeat"`
}

// result becomes the task's result.
type result struct {
	Greeting string `json:"greeting"`
	Letters  int    `json:"letters"`
	TaskID   string `json:"task_id"`
}

func main() {
	if err := run(); err != nil {
		// stderr becomes the task's error; a non-zero exit is a failure that
		// Skiff retries while max_retries allows.
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run() error {
	raw, err := os.ReadFile(os.Getenv("SKIFF_TASK_PAYLOAD"))
	if err != nil {
		return fmt.Errorf("read payload: %w", err)
	}
	var p payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("decode payload %s: %w", raw, err)
	}
	name := cmp.Or(p.Name, "world")
	repeat := min(max(p.Repeat, 1), 10)

	var lines []string
	for i := range repeat {
		lines = append(lines, "hello, "+name)
		fmt.Println(lines[i]) // stdout becomes the task's output
		// A SKIFF_PROGRESS: line becomes the task's latest_progress.
		fmt.Printf("SKIFF_PROGRESS:{\"pct\": %d, \"stage\": \"greeting\"}\n", (i+1)*100/repeat)
	}

	out, err := json.Marshal(result{Greeting: strings.Join(lines, "\n"), Letters: len([]rune(name)),
		TaskID: os.Getenv("SKIFF_TASK_ID")})
	if err != nil {
		return err
	}
	if err := os.WriteFile(os.Getenv("SKIFF_TASK_RESULT"), out, 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}
