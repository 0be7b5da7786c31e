package secret

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExpand(t *testing.T) {
	t.Setenv("THRONG_TEST_SECRET", "s3cr3t")
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte("from-a-file\n"), 0o600)
	for _, tt := range []struct {
		in, want, err string
	}{
		{"Bearer ${THRONG_TEST_SECRET}", "Bearer s3cr3t", ""},
		{"${file:" + file + "}", "from-a-file", ""},
		{"no reference", "no reference", ""},
		{"literal $${NAME}", "literal ${NAME}", ""},
		{"${THRONG_TEST_UNSET_VARIABLE}", "", "THRONG_TEST_UNSET_VARIABLE is not set"},
		{"${file:/no/such/file}", "", "/no/such/file"},
	} {
		got, err := Expand(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Expand(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// Read takes one whole reference; literal says whether a plain value is
// taken as it is.
func TestRead(t *testing.T) {
	t.Setenv("THRONG_TEST_SECRET", "s3cr3t")
	file := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(file, []byte("from-a-file\r\n"), 0o600)
	for _, tt := range []struct {
		in      string
		literal bool
		want    string
		err     string
	}{
		{" ${THRONG_TEST_SECRET} ", false, "s3cr3t", ""},
		{"${file:" + file + "}", false, "from-a-file", ""},
		{"plain-user", true, "plain-user", ""},
		{"plain-password", false, "", "never the secret itself"},
		{"x${THRONG_TEST_SECRET}", true, "", "never the secret itself"},
		{"${THRONG_TEST_UNSET_VARIABLE}", true, "", "is not set"},
	} {
		got, err := Read(tt.in, tt.literal)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Read(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Read(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// A ${file:PATH} that is not a regular file, or is too large, is refused
// at once with what it is; nothing waits on a FIFO or reads /dev/zero.
func TestFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	f, _ := os.Create(big)
	f.Truncate(MaxFileSize + 1) // sparse: costs nothing
	f.Close()
	for _, tt := range []struct{ path, err string }{
		{fifo, "a FIFO (named pipe), not a regular file"},
		{"/dev/zero", "a character device, not a regular file"},
		{dir, "a directory, not a regular file"},
		{big, "over the limit of 16777216"},
		{filepath.Join(dir, "none"), "no such file"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Expand("${file:" + tt.path + "}")
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("%s: error %v, want %q and the path", tt.path, err, tt.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the read hung", tt.path)
		}
	}
}

// A file whose size says nothing (files under /proc say 0) is still
// bounded: the read stops one byte past the limit and refuses.
func TestFileBoundedWhenTheSizeLies(t *testing.T) {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil || len(b) < 200 {
		t.Skipf("/proc/self/maps: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile("/proc/self/maps", 100); err == nil || !strings.Contains(err.Error(), "over the limit of 100 bytes") {
		t.Errorf("error %v", err)
	}
	if got, err := ReadFile("/proc/self/maps", 1<<20); err != nil || len(got) < 200 {
		t.Errorf("%d bytes, %v", len(got), err)
	}
}
