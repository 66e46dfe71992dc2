package faults

import (
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/util/vfsutil"
	"github.com/ncruces/go-sqlite3/vfs"
)

// diskState is what the faulty disk does with writes.
type diskState int32

const (
	diskOK       diskState = iota
	diskReadOnly           // writes fail as on a file system remounted read-only (EIO/EROFS: SQLITE_IOERR_WRITE)
	diskFull               // writes fail as on a full disk (ENOSPC: SQLITE_FULL)
)

// faultyDisk is a SQLite VFS over the operating system's that fails every
// write, truncate and sync while its state says so; reads keep working, as
// they do on a read-only or full file system. Register it with vfs.Register
// and open the store with memory.Options{VFS: name}.
type faultyDisk struct {
	vfs.VFS
	state  atomic.Int32
	failed atomic.Int64 // writes refused
}

func newFaultyDisk() *faultyDisk { return &faultyDisk{VFS: vfs.Find("")} }

func (d *faultyDisk) set(s diskState) { d.state.Store(int32(s)) }

// err is the error a write gets now; nil when the disk works.
func (d *faultyDisk) err(code sqlite3.ExtendedErrorCode) error {
	switch diskState(d.state.Load()) {
	case diskReadOnly:
		d.failed.Add(1)
		return code
	case diskFull:
		d.failed.Add(1)
		return sqlite3.FULL
	}
	return nil
}

func (d *faultyDisk) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, flags, err := vfsutil.WrapOpen(d.VFS, name, flags)
	if err != nil {
		return nil, flags, err
	}
	return &faultyFile{File: f, disk: d}, flags, nil
}

func (d *faultyDisk) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, flags, err := vfsutil.WrapOpenFilename(d.VFS, name, flags)
	if err != nil {
		return nil, flags, err
	}
	return &faultyFile{File: f, disk: d}, flags, nil
}

type faultyFile struct {
	vfs.File
	disk *faultyDisk
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.disk.err(sqlite3.IOERR_WRITE); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultyFile) Truncate(size int64) error {
	if err := f.disk.err(sqlite3.IOERR_TRUNCATE); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *faultyFile) Sync(flags vfs.SyncFlag) error {
	if err := f.disk.err(sqlite3.IOERR_FSYNC); err != nil {
		return err
	}
	return f.File.Sync(flags)
}

// The optional methods go to the wrapped file (WAL needs shared memory).

func (f *faultyFile) Unwrap() vfs.File               { return f.File }
func (f *faultyFile) SharedMemory() vfs.SharedMemory { return vfsutil.WrapSharedMemory(f.File) }
func (f *faultyFile) MemoryMapper() vfs.MemoryMapper { return vfsutil.WrapMemoryMapper(f.File) }
func (f *faultyFile) LockState() vfs.LockLevel       { return vfsutil.WrapLockState(f.File) }
func (f *faultyFile) PersistWAL() bool               { return vfsutil.WrapPersistWAL(f.File) }
func (f *faultyFile) SetPersistWAL(keep bool)        { vfsutil.WrapSetPersistWAL(f.File, keep) }
func (f *faultyFile) PowersafeOverwrite() bool       { return vfsutil.WrapPowersafeOverwrite(f.File) }
func (f *faultyFile) SetPowersafeOverwrite(psow bool) {
	vfsutil.WrapSetPowersafeOverwrite(f.File, psow)
}
func (f *faultyFile) ChunkSize(size int)              { vfsutil.WrapChunkSize(f.File, size) }
func (f *faultyFile) SizeHint(size int64) error       { return vfsutil.WrapSizeHint(f.File, size) }
func (f *faultyFile) HasMoved() (bool, error)         { return vfsutil.WrapHasMoved(f.File) }
func (f *faultyFile) CheckpointStart()                { vfsutil.WrapCheckpointStart(f.File) }
func (f *faultyFile) CheckpointDone()                 { vfsutil.WrapCheckpointDone(f.File) }
func (f *faultyFile) BusyHandler(handler func() bool) { vfsutil.WrapBusyHandler(f.File, handler) }
func (f *faultyFile) Pragma(name, value string) (string, error) {
	return vfsutil.WrapPragma(f.File, name, value)
}
