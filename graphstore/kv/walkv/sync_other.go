//go:build !linux

package walkv

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
