// Package fstree copies directory trees for the local foundation's cells and staging,
// giving the copy to a user: an instance's own copy of its droplet, and the scratch
// copy an app is staged in as the instances' user.
package fstree

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
)

// Chown gives path (not what a symbolic link points to) to owner's user and group; a
// nil owner leaves it to this process's.
func Chown(path string, owner *osproc.Credential) error {
	if owner == nil {
		return nil
	}
	return os.Lchown(path, int(owner.Uid), int(owner.Gid))
}

// Copy copies the directory src to dst (which must not exist): directories, regular
// files (their permission bits, plus the owner's read and write: the copy is its
// owner's to change, as a container's app dir is; io.Copy goes through
// copy_file_range, which shares blocks where the file system can) and symbolic links,
// owned by owner (nil: this process's user). Sockets, devices and fifos are not part of
// an app and are left out.
func Copy(src, dst string, owner *osproc.Credential) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()|0o700); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFile(path, target, info.Mode().Perm()|0o600); err != nil {
				return err
			}
		default:
			return nil
		}
		return Chown(target, owner)
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
