package walkv

import (
	"os"
	"syscall"
)

// fdatasync syncs f's data and only the metadata needed to read it: the file is written full
// of zeros ahead, so a commit's sync has no metadata to write.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
