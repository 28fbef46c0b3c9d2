package amqptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority generated at test time (Go crypto/x509) that issues leaf
// certificates: DER for RabbitMQ, PEM files for the Go clients.
type CA struct {
	t    testing.TB
	Cert *x509.Certificate
	DER  []byte
	key  *ecdsa.PrivateKey
	dir  string
	File string // the CA certificate, PEM
	n    int64
}

// NewCA makes a throw-away ECDSA P-256 CA, valid for an hour.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &CA{t: t, Cert: cert, DER: der, key: key, dir: t.TempDir(), n: 1}
	ca.File = filepath.Join(ca.dir, "ca.pem")
	writePEM(t, ca.File, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	return ca
}

// Issue returns a leaf's DER, its PKCS #8 key DER, and both as PEM files.
func (ca *CA) Issue(cn string, usage x509.ExtKeyUsage, dns []string, ips []net.IP) (der, keyDER []byte, certFile, keyFile string) {
	ca.t.Helper()
	ca.n++
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.n), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: dns, IPAddresses: ips}
	if der, err = x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key); err != nil {
		ca.t.Fatal(err)
	}
	if keyDER, err = x509.MarshalPKCS8PrivateKey(key); err != nil {
		ca.t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.dir, cn+".pem"), filepath.Join(ca.dir, cn+".key")
	writePEM(ca.t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writePEM(ca.t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})))
	return der, keyDER, certFile, keyFile
}

func writePEM(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
