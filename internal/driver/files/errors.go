package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	smb2 "github.com/cloudsoda/go-smb2"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/fsroot"
)

// NTSTATUS codes this driver names or classes ([MS-ERREF] 2.3.1).
const (
	statusLogonFailure       = 0xC000006D
	statusWrongPassword      = 0xC000006A
	statusNoSuchUser         = 0xC0000064
	statusAccountRestriction = 0xC000006E
	statusAccountDisabled    = 0xC0000072
	statusPasswordExpired    = 0xC0000071
	statusAccountLockedOut   = 0xC0000234
	statusBadNetworkName     = 0xC00000CC
	statusNetworkNameDeleted = 0xC00000C9
	statusUserSessionDeleted = 0xC0000203
	statusSessionExpired     = 0xC000035C
	statusDiskFull           = 0xC000007F
	statusInsufficientRes    = 0xC000009A
	statusInternalError      = 0xC00000E5
	statusNotSupported       = 0xC00000BB
	statusEndOfFile          = 0xC0000011
	statusSharingViolation   = 0xC0000043
	statusFileIsADirectory   = 0xC00000BA
	statusNotADirectory      = 0xC0000103
	statusDirectoryNotEmpty  = 0xC0000101
	statusInvalidParameter   = 0xC000000D
)

var statusNames = map[uint32]string{
	statusLogonFailure: "STATUS_LOGON_FAILURE", statusWrongPassword: "STATUS_WRONG_PASSWORD",
	statusNoSuchUser: "STATUS_NO_SUCH_USER", statusAccountRestriction: "STATUS_ACCOUNT_RESTRICTION",
	statusAccountDisabled: "STATUS_ACCOUNT_DISABLED", statusPasswordExpired: "STATUS_PASSWORD_EXPIRED",
	statusAccountLockedOut: "STATUS_ACCOUNT_LOCKED_OUT", statusBadNetworkName: "STATUS_BAD_NETWORK_NAME",
	statusNetworkNameDeleted: "STATUS_NETWORK_NAME_DELETED", statusUserSessionDeleted: "STATUS_USER_SESSION_DELETED",
	statusSessionExpired: "STATUS_NETWORK_SESSION_EXPIRED", statusDiskFull: "STATUS_DISK_FULL",
	statusInsufficientRes: "STATUS_INSUFFICIENT_RESOURCES", statusInternalError: "STATUS_INTERNAL_ERROR",
	statusNotSupported: "STATUS_NOT_SUPPORTED", statusEndOfFile: "STATUS_END_OF_FILE",
	statusSharingViolation: "STATUS_SHARING_VIOLATION", statusFileIsADirectory: "STATUS_FILE_IS_A_DIRECTORY",
	statusNotADirectory: "STATUS_NOT_A_DIRECTORY", statusDirectoryNotEmpty: "STATUS_DIRECTORY_NOT_EMPTY",
	statusInvalidParameter: "STATUS_INVALID_PARAMETER",
}

func statusName(code uint32) string {
	if n, ok := statusNames[code]; ok {
		return fmt.Sprintf("%s (0x%08X)", n, code)
	}
	return fmt.Sprintf("NTSTATUS 0x%08X", code)
}

// classify turns an operation's failure into an error with its class and a
// short message that names what was being done (what: "open f00000001.bin").
//
//   - not found, exists, permission, a sharing violation, other status
//     replies about the request, a symbolic link under a local target
//     (refused, never followed): status_4xx;
//   - the server's own trouble (disk full, out of resources): status_5xx;
//   - the connection broke, or the server dropped the session: io;
//   - no answer in time: timeout; a malformed answer: protocol.
func classify(err error, what string) error {
	if err == nil {
		return nil
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	class, msg := classOf(err)
	return driver.Errorf(class, fmt.Errorf("%s: %s", what, msg))
}

func classOf(err error) (driver.Class, string) {
	var re *smb2.ResponseError
	var te *smb2.TransportError
	var ie *smb2.InvalidResponseError
	var ne net.Error
	var errno syscall.Errno
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return driver.Timeout, "no answer within the timeout"
	case errors.Is(err, context.Canceled):
		return driver.Other, "stopped"
	case errors.As(err, &re):
		switch re.Code {
		case statusDiskFull, statusInsufficientRes, statusInternalError:
			return driver.Status5xx, "the server answered " + statusName(re.Code)
		case statusUserSessionDeleted, statusSessionExpired, statusNetworkNameDeleted:
			return driver.IO, "the server dropped the session: " + statusName(re.Code)
		case statusLogonFailure, statusWrongPassword, statusNoSuchUser, statusAccountRestriction,
			statusAccountDisabled, statusPasswordExpired, statusAccountLockedOut:
			return driver.Auth, "the server refused the log-on: " + statusName(re.Code)
		}
		return driver.Status4xx, "the server answered " + statusName(re.Code)
	case errors.Is(err, fsroot.ErrLink):
		return driver.Status4xx, "it is, or its path goes through, a symbolic link: throng follows none under a local target's directory (remove the link)"
	case errors.Is(err, fsroot.ErrEscape):
		return driver.Status4xx, "the name leaves the target's directory"
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOENT):
		return driver.Status4xx, "not found (removed during the run?)"
	case errors.Is(err, os.ErrExist):
		return driver.Status4xx, "already exists"
	case errors.Is(err, os.ErrPermission):
		return driver.Status4xx, "access denied"
	case errors.As(err, &te):
		return driver.IO, "the connection broke: " + te.Err.Error()
	case errors.As(err, &ie):
		return driver.Protocol, ie.Error()
	case errors.Is(err, io.ErrShortWrite):
		return driver.IO, "short write"
	case errors.As(err, &errno):
		switch errno {
		case syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS:
			return driver.Status5xx, errno.Error()
		case syscall.ECONNRESET, syscall.EPIPE, syscall.ECONNABORTED:
			return driver.IO, "the connection broke: " + errno.Error()
		}
		return driver.Status4xx, errno.Error()
	case errors.As(err, &ne) && ne.Timeout():
		return driver.Timeout, "no answer within the timeout"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed):
		return driver.IO, "the connection broke: " + err.Error()
	}
	return driver.Classify(err), err.Error()
}

// brokenConn reports whether an action's failure leaves its connection
// unusable, so that the next action opens a new one.
func brokenConn(err error) bool {
	switch driver.Classify(err) {
	case driver.IO, driver.Timeout, driver.Protocol, driver.Dial:
		return true
	}
	return false
}

// classifyLogon classes a failure to negotiate or log on.
func classifyLogon(err error, c *Config) error {
	var re *smb2.ResponseError
	switch {
	case errors.As(err, &re) && (re.Code == statusLogonFailure || re.Code == statusWrongPassword || re.Code == statusNoSuchUser):
		return driver.Errorf(driver.Auth, fmt.Errorf("the server refused user %q with this password (%s; the password is read from %s)",
			c.tgt.user, statusName(re.Code), c.Password))
	case errors.Is(err, os.ErrPermission):
		return driver.Errorf(driver.Auth, fmt.Errorf("the server refused user %q: access denied", c.tgt.user))
	case errors.As(err, &re) && re.Code == statusNotSupported:
		return driver.Errorf(driver.Protocol, fmt.Errorf("negotiate: the server does not support what was asked (dialect %s, signing %s): %s", c.Dialect, c.Signing, statusName(re.Code)))
	}
	var ie *smb2.InvalidResponseError
	if errors.As(err, &ie) {
		if c.dialect != 0 {
			return driver.Errorf(driver.Protocol, fmt.Errorf("negotiate with dialect %s pinned: %v (does the server allow this dialect?)", c.Dialect, ie))
		}
		return driver.Errorf(driver.Protocol, fmt.Errorf("negotiate: %v", ie))
	}
	return classify(err, "log on")
}

// classifyMount classes a failure to mount the share.
func classifyMount(err error, share string) error {
	var re *smb2.ResponseError
	if errors.As(err, &re) && re.Code == statusBadNetworkName {
		return driver.Errorf(driver.Status4xx, fmt.Errorf("the server has no share %q (%s)", share, statusName(re.Code)))
	}
	if errors.Is(err, os.ErrPermission) {
		return driver.Errorf(driver.Auth, fmt.Errorf("the server refused access to share %q", share))
	}
	return classify(err, "mount share "+share)
}

// unwrapOp shortens a dial error to its cause ("connection refused").
func unwrapOp(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}
