package agent

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/secret"
)

// TLS on the agent protocol.
//
// An agent serves TLS 1.3 with a certificate given by file or generated at
// its first start and kept beside its results (so its fingerprint stays
// the same from one start to the next). A controller verifies it in one of
// two ways:
//
//   - pinned: the certificate's SHA-256 fingerprint must be one the
//     controller was given (--agent-fingerprint, or a file of them);
//   - by the token alone, when nothing is pinned: the token proofs of the
//     handshake (wire.go) cover a value exported from the TLS session
//     (RFC 8446 section 7.5), which differs on the two sides of anyone in
//     the middle, so a man in the middle cannot pass them without the
//     token. What pinning adds: such a man in the middle then never sees
//     one proof it could try to guess a weak token from offline.
//
// The token stays the authentication in both ways: a certificate proves
// nothing about who may run load.

// exporterLabel is the label of the TLS exporter the proofs are bound to.
const exporterLabel = "EXPORTER-throng-agent"

// Fingerprint is a certificate's fingerprint as throng prints it:
// "sha256:" and the lowercase hex of SHA-256 over its DER bytes (what
// `openssl x509 -noout -fingerprint -sha256` prints, without the colons).
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseFingerprint reads a fingerprint as sha256:HEX, HEX, or as openssl
// prints it (AB:CD:..., optionally after "sha256 Fingerprint=").
func ParseFingerprint(s string) (string, error) {
	t := strings.TrimSpace(s)
	if i := strings.LastIndexByte(t, '='); i >= 0 && strings.Contains(strings.ToLower(t[:i]), "fingerprint") {
		t = t[i+1:]
	}
	if len(t) > 7 && strings.EqualFold(t[:7], "sha256:") {
		t = t[7:]
	}
	t = strings.ToLower(strings.ReplaceAll(t, ":", ""))
	b, err := hex.DecodeString(t)
	if err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("%q is not a certificate fingerprint: want sha256: and 64 hex digits (throng agent prints it at start)", s)
	}
	return "sha256:" + t, nil
}

// ParsePins reads a file of pinned fingerprints: one per line (a word
// after it is a comment, as is a line starting with #), or PEM
// certificates, whose fingerprints are taken. It refuses a file that pins
// nothing.
func ParsePins(b []byte) ([]string, error) {
	var pins []string
	rest := b
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			pins = append(pins, Fingerprint(block.Bytes))
		}
	}
	if len(pins) > 0 {
		return pins, nil
	}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fp, err := ParseFingerprint(strings.Fields(line)[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		pins = append(pins, fp)
	}
	if len(pins) == 0 {
		return nil, errors.New("no fingerprint and no PEM certificate in it")
	}
	return pins, nil
}

// maxPEM bounds a certificate or key file read.
const maxPEM = 1 << 20

// LoadCertificate reads a certificate (PEM, the agent's first, then any
// intermediates) and its private key from files.
func LoadCertificate(certFile, keyFile string) (tls.Certificate, error) {
	c, err := secret.ReadFile(certFile, maxPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate %s: %v", certFile, err)
	}
	k, err := secret.ReadFile(keyFile, maxPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key %s: %v", keyFile, err)
	}
	cert, err := tls.X509KeyPair(c, k)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate %s and key %s: %v", certFile, keyFile, err)
	}
	return cert, nil
}

// Names of the generated certificate and key in an agent's directory.
const (
	GeneratedCert = "agent-cert.pem"
	GeneratedKey  = "agent-key.pem"
)

// LoadOrCreateCertificate returns the certificate kept in dir, generating
// it (an ECDSA P-256 key, self-signed, valid 10 years) when there is none.
// The key is written with mode 0600 and never overwritten; a key that
// another user owns is refused (someone else could have planted it).
// created says whether it was generated now.
func LoadOrCreateCertificate(dir string) (cert tls.Certificate, created bool, err error) {
	certFile, keyFile := filepath.Join(dir, GeneratedCert), filepath.Join(dir, GeneratedKey)
	if _, err := os.Lstat(keyFile); err == nil {
		if err := ownedByMe(keyFile); err != nil {
			return tls.Certificate{}, false, err
		}
		cert, err := LoadCertificate(certFile, keyFile)
		return cert, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, false, err
	}
	certPEM, keyPEM, err := generate()
	if err != nil {
		return tls.Certificate{}, false, err
	}
	// The key first, exclusively: two agents starting at once in one
	// directory do not overwrite each other's.
	if err := writeExclusive(keyFile, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, false, fmt.Errorf("key %s: %w", keyFile, err)
	}
	if err := writeExclusive(certFile, certPEM, 0o644); err != nil {
		os.Remove(keyFile)
		return tls.Certificate{}, false, fmt.Errorf("certificate %s: %w", certFile, err)
	}
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	return cert, true, err
}

// ownedByMe refuses a file that is not a regular file owned by this
// process's user.
func ownedByMe(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s is not a regular file owned by this user: refusing it as the agent's key (give --tls-key, or another --dir)", path)
	}
	return nil
}

func writeExclusive(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// generate makes a self-signed certificate and its key, PEM-encoded.
func generate() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "throng agent " + host},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// ServerTLS is an agent's TLS configuration for cert.
func ServerTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
}

// clientTLS is a controller's TLS configuration: the agent's certificate
// must be one of pins, or anything when pins is empty (the token proofs,
// bound to the session, then authenticate the agent). seen receives the
// certificate's fingerprint.
func clientTLS(pins []string, seen *string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The chain is not checked against a CA: an agent is trusted by
		// its pinned fingerprint, or by the token bound to the session.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the agent presented no certificate")
			}
			fp := Fingerprint(cs.PeerCertificates[0].Raw)
			*seen = fp
			if len(pins) == 0 {
				return nil
			}
			for _, p := range pins {
				if p == fp {
					return nil
				}
			}
			return &PinError{Got: fp}
		},
	}
}

// PinError is a controller's refusal of an agent whose certificate is not
// pinned.
type PinError struct{ Got string }

func (e *PinError) Error() string {
	return fmt.Sprintf("the agent's TLS certificate is %s, which is not pinned (--agent-fingerprint): refused", e.Got)
}

// binding is the value a connection's proofs are bound to: the TLS
// session's exporter, or nothing in plaintext.
func binding(c any) ([]byte, error) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return nil, nil
	}
	cs := tc.ConnectionState()
	return cs.ExportKeyingMaterial(exporterLabel, nil, 32)
}

// plaintextPeer reports whether the first bytes a TLS client received
// were a plaintext agent's greeting.
func plaintextPeer(err error) bool {
	var rh tls.RecordHeaderError
	return errors.As(err, &rh) && bytes.HasPrefix([]byte(protocol), rh.RecordHeader[:])
}
