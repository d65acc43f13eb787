package gvisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"syscall"
)

// A warm sandbox's init is the launcher: a static x86-64 program of a few
// hundred bytes (source: testdata/launcher.s), bind-mounted read-only into
// the sandbox. It waits on a pipe the driver holds from boot; an attempt
// writes its command there, and the launcher execs the runner in its own
// place, so the runner is the sandbox's only task process and its init,
// as in a cold start. No runsc process starts on the attempt's path: the
// `runsc run` that booted the sandbox waits for the runner and exits with
// its status. The images are the user's (a FROM scratch image has nothing
// to run), so the driver brings its own program.

// launcherPath is where the runner's sandbox has the launcher.
const launcherPath = "/run/skiff/launcher"

// The launcher's file descriptors (runsc run --pass-fd): it reads the
// command from launcherCmdFD and reports on launcherStatusFD.
const (
	launcherCmdFD    = 3
	launcherStatusFD = 4
)

// launcherBuf is the address of the launcher's message buffer (its bss),
// launcherCap the buffer's size: a message must be smaller.
const (
	launcherBuf = 0x10000000
	launcherCap = 0x100000
)

// launcherReady is the byte the launcher writes on its status pipe once
// it runs.
const launcherReady = 'R'

// launcherCode is testdata/launcher.s assembled.
var launcherCode = []byte{
	0xc6, 0x04, 0x25, 0x00, 0x00, 0x00, 0x10, 0x52, 0xb8, 0x01, 0x00, 0x00,
	0x00, 0xbf, 0x04, 0x00, 0x00, 0x00, 0xbe, 0x00, 0x00, 0x00, 0x10, 0xba,
	0x01, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x41, 0xbd, 0x00, 0x00, 0x00, 0x10,
	0x31, 0xc0, 0xbf, 0x03, 0x00, 0x00, 0x00, 0x4c, 0x89, 0xee, 0xba, 0x00,
	0x00, 0x10, 0x10, 0x44, 0x29, 0xea, 0x0f, 0x05, 0x48, 0x85, 0xc0, 0x7e,
	0x05, 0x49, 0x01, 0xc5, 0xeb, 0xe2, 0xb8, 0x48, 0x00, 0x00, 0x00, 0xbf,
	0x04, 0x00, 0x00, 0x00, 0xbe, 0x02, 0x00, 0x00, 0x00, 0xba, 0x01, 0x00,
	0x00, 0x00, 0x0f, 0x05, 0xb8, 0x03, 0x00, 0x00, 0x00, 0xbf, 0x03, 0x00,
	0x00, 0x00, 0x0f, 0x05, 0x41, 0xbc, 0x01, 0x00, 0x00, 0x00, 0xb8, 0x50,
	0x00, 0x00, 0x00, 0x48, 0x8b, 0x3c, 0x25, 0x18, 0x00, 0x00, 0x10, 0x0f,
	0x05, 0x48, 0x85, 0xc0, 0x7c, 0x25, 0x41, 0xbc, 0x02, 0x00, 0x00, 0x00,
	0xb8, 0x3b, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x3c, 0x25, 0x00, 0x00, 0x00,
	0x10, 0x48, 0x8b, 0x34, 0x25, 0x08, 0x00, 0x00, 0x10, 0x48, 0x8b, 0x14,
	0x25, 0x10, 0x00, 0x00, 0x10, 0x0f, 0x05, 0xf7, 0xd8, 0x89, 0x04, 0x25,
	0x00, 0x00, 0x00, 0x10, 0x44, 0x89, 0x24, 0x25, 0x04, 0x00, 0x00, 0x10,
	0xb8, 0x01, 0x00, 0x00, 0x00, 0xbf, 0x04, 0x00, 0x00, 0x00, 0xbe, 0x00,
	0x00, 0x00, 0x10, 0xba, 0x08, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xb8, 0xe7,
	0x00, 0x00, 0x00, 0xbf, 0x7f, 0x00, 0x00, 0x00, 0x0f, 0x05,
}

// launcherELF wraps launcherCode in an ELF executable: one read-execute
// segment with the headers and the code, one read-write segment of zeros
// at launcherBuf for the message.
func launcherELF() []byte {
	const base, ehsize, phsize, nph = 0x400000, 64, 56, 2
	hdrs := uint64(ehsize + nph*phsize)
	total := hdrs + uint64(len(launcherCode))
	le := binary.LittleEndian
	b := make([]byte, 0, total)
	b = append(b, 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	b = le.AppendUint16(b, 2)    // ET_EXEC
	b = le.AppendUint16(b, 0x3e) // x86-64
	b = le.AppendUint32(b, 1)
	b = le.AppendUint64(b, base+hdrs) // entry
	b = le.AppendUint64(b, ehsize)    // program headers
	b = le.AppendUint64(b, 0)         // no section headers
	b = le.AppendUint32(b, 0)
	for _, v := range []uint16{ehsize, phsize, nph, 0, 0, 0} {
		b = le.AppendUint16(b, v)
	}
	segment := func(flags uint32, offset, addr, filesz, memsz uint64) {
		b = le.AppendUint32(b, 1) // PT_LOAD
		b = le.AppendUint32(b, flags)
		for _, v := range []uint64{offset, addr, addr, filesz, memsz, 0x1000} {
			b = le.AppendUint64(b, v)
		}
	}
	segment(5, 0, base, total, total)          // r-x
	segment(6, 0, launcherBuf, 0, launcherCap) // rw-, zero-filled
	return append(b, launcherCode...)
}

// WarmSupported reports whether this build can keep warm sandboxes (the
// launcher is x86-64 code).
func WarmSupported() bool { return runtime.GOARCH == "amd64" }

// errLaunchTooBig says an attempt's command and environment do not fit the
// launcher's buffer; the attempt then starts cold.
var errLaunchTooBig = errors.New("launch message larger than the launcher's buffer")

// launchMessage lays out what the launcher reads: the addresses of path,
// argv, envp and cwd as they will be in its buffer, the two
// NULL-terminated pointer arrays, then the strings.
func launchMessage(path string, argv, env []string, cwd string) ([]byte, error) {
	ptrs := 4 + len(argv) + 1 + len(env) + 1
	strs := []string{path, cwd}
	strs = append(strs, argv...)
	strs = append(strs, env...)
	size := 8 * ptrs
	for _, s := range strs {
		size += len(s) + 1
	}
	// The launcher stops reading when the buffer is full: a message that
	// fills it could be cut short unseen.
	if size >= launcherCap {
		return nil, errLaunchTooBig
	}
	le := binary.LittleEndian
	b := make([]byte, 8*ptrs, size)
	next := uint64(launcherBuf + 8*ptrs) // where the next string goes
	put := func(slot int, s string) {
		le.PutUint64(b[8*slot:], next)
		b = append(append(b, s...), 0)
		next += uint64(len(s) + 1)
	}
	argvAt, envAt := 4, 4+len(argv)+1
	le.PutUint64(b[8:], launcherBuf+8*uint64(argvAt))
	le.PutUint64(b[16:], launcherBuf+8*uint64(envAt))
	put(0, path)
	put(3, cwd)
	for i, s := range argv {
		put(argvAt+i, s)
	}
	for i, s := range env {
		put(envAt+i, s)
	}
	return b, nil
}

// launchFailure decodes what the launcher wrote after its ready byte: an
// error if it could not start the runner, nil if it wrote nothing (the
// runner started).
func launchFailure(report []byte, path, cwd string) error {
	if len(report) == 0 {
		return nil
	}
	if len(report) != 8 {
		return fmt.Errorf("launcher: unreadable report %x", report)
	}
	errno := syscall.Errno(binary.LittleEndian.Uint32(report))
	if binary.LittleEndian.Uint32(report[4:]) == 1 {
		return fmt.Errorf("launcher: chdir %s: %w", cwd, errno)
	}
	// The words of runsc's own error for a runner it cannot load, which
	// startFailure recognises.
	return fmt.Errorf("creating process: failed to load %s: %w", path, errno)
}
