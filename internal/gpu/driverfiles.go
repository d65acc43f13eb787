package gpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The driver's user-space files a CUDA program and NVIDIA's tools need
// (the "compute" and "utility" capabilities of nvidia-container-toolkit,
// which are what nvproxy allows): every version and link of these names.
var (
	driverLib = regexp.MustCompile(`^(libcuda|libcudadebugger|libnvidia-ml|libnvidia-ptxjitcompiler|libnvidia-nvvm|libnvidia-nvvm70|` +
		`libnvidia-gpucomp|libnvidia-allocator|libnvidia-cfg|libnvidia-opencl|libnvidia-fatbinaryloader|libnvidia-compiler|` +
		`libnvidia-pkcs11|libnvidia-pkcs11-openssl3)\.so(\.[0-9.]+)?$`)
	driverBins = []string{"nvidia-smi", "nvidia-debugdump"}
)

// driverFile is one file to gather: its source and where it goes.
type driverFile struct {
	src  string // absolute host path (a link stays a link when its target is gathered too)
	dir  string // "lib64" or "bin"
	name string
}

func (f driverFile) rel() string { return f.dir + "/" + f.name }

// driverFiles finds the libraries and tools: in opts.DriverDir when set,
// else in the directories the loader cache names for them and the usual
// tool directories under opts.Root.
func driverFiles(ctx context.Context, opts Options) ([]driverFile, error) {
	var libDirs, binDirs []string
	where := ""
	if opts.DriverDir != "" {
		d := filepath.Clean(opts.DriverDir)
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("gpu: --gpu-driver-dir %s is not a directory", d)
		}
		libDirs = []string{filepath.Join(d, "lib64"), filepath.Join(d, "lib"), d}
		binDirs = []string{filepath.Join(d, "bin"), d}
		where = d
	} else {
		ld := opts.Ldconfig
		if ld == nil {
			ld = ldconfig
		}
		out, err := ld(ctx)
		if err != nil {
			return nil, fmt.Errorf("gpu: read the loader cache (or pass --gpu-driver-dir): %w", err)
		}
		libDirs = cacheDirs(out)
		for _, d := range libDirs {
			binDirs = append(binDirs, filepath.Join(filepath.Dir(d), "bin"))
		}
		for _, d := range []string{"usr/local/nvidia/bin", "usr/bin", "usr/local/bin", "bin", "usr/sbin"} {
			binDirs = append(binDirs, filepath.Join(opts.Root, d))
		}
		where = "the loader cache (ldconfig -p)"
	}
	seen := map[string]bool{}
	var files []driverFile
	for _, d := range libDirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if driverLib.MatchString(e.Name()) && !seen["lib64/"+e.Name()] {
				seen["lib64/"+e.Name()] = true
				files = append(files, driverFile{src: filepath.Join(d, e.Name()), dir: "lib64", name: e.Name()})
			}
		}
	}
	for _, name := range driverBins {
		for _, d := range binDirs {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && !seen["bin/"+name] {
				seen["bin/"+name] = true
				files = append(files, driverFile{src: p, dir: "bin", name: name})
			}
		}
	}
	for _, need := range []string{"libcuda.so.1", "libnvidia-ml.so.1"} {
		if !seen["lib64/"+need] {
			return files, fmt.Errorf("gpu: %s not found in %s: install the driver's user-space libraries, or name their directory with --gpu-driver-dir", need, where)
		}
	}
	return files, nil
}

func ldconfig(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	path := "/sbin/ldconfig"
	if _, err := os.Stat(path); err != nil {
		path = "ldconfig"
	}
	return exec.CommandContext(ctx, path, "-p").Output()
}

// cacheDirs are the directories `ldconfig -p` names for driver libraries
// of this machine's architecture, in the cache's order.
func cacheDirs(out []byte) []string {
	arch := map[string]string{"amd64": "x86-64", "arm64": "AArch64"}[runtime.GOARCH]
	var dirs []string
	for line := range strings.Lines(string(out)) {
		lhs, target, ok := strings.Cut(strings.TrimSpace(line), " => ")
		if !ok {
			continue
		}
		name, tags, _ := strings.Cut(lhs, " ")
		if !driverLib.MatchString(name) || (arch != "" && !strings.Contains(tags, arch)) {
			continue
		}
		if d := filepath.Dir(strings.TrimSpace(target)); filepath.IsAbs(d) && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// checkUserSpace refuses user-space libraries of another version than the
// kernel module: CUDA would fail in every task with "driver/library
// version mismatch".
func checkUserSpace(files []driverFile, version string) error {
	var versions []string
	for _, f := range files {
		if v, ok := strings.CutPrefix(f.name, "libcuda.so."); ok && strings.Count(v, ".") >= 1 {
			if v == version {
				return nil
			}
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return nil // only the libcuda.so.1 link: nothing to compare
	}
	return fmt.Errorf("gpu: the driver's libraries are version %s but its kernel module is %s: point --gpu-driver-dir at the files of %s",
		strings.Join(versions, ", "), version, version)
}

// stage gathers files into dir (replacing what was there): lib64/ and
// bin/, links kept as links to gathered files, other files hard-linked
// where dir shares their filesystem and copied elsewhere.
func stage(files []driverFile, dir string) error {
	tmp := dir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	for _, sub := range []string{"lib64", "bin"} {
		if err := os.MkdirAll(filepath.Join(tmp, sub), 0o755); err != nil {
			return err
		}
	}
	names := map[string]bool{}
	for _, f := range files {
		names[f.rel()] = true
	}
	for _, f := range files {
		dst := filepath.Join(tmp, f.dir, f.name)
		if target, err := os.Readlink(f.src); err == nil && !strings.Contains(target, "/") && names[f.dir+"/"+target] {
			if err := os.Symlink(target, dst); err != nil {
				return err
			}
			continue
		}
		if err := linkOrCopy(f.src, dst); err != nil {
			return fmt.Errorf("%s: %w", f.src, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	// Readable by the sandbox's runner (nobody), like the host's own copy.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// linkOrCopy hard-links src's final file at dst, or copies it with its
// mode.
func linkOrCopy(src, dst string) error {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if os.Link(real, dst) == nil {
		return nil
	}
	in, err := os.Open(real)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm()|0o444)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
