package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
)

func TestCredentialsServeLoopbackVerifiedByTheirCA(t *testing.T) {
	dir := t.TempDir()
	creds, err := writeCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(creds.ServingCertFile, creds.ServingKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(creds.CAData) {
		t.Fatal("CA data holds no certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("serving certificate does not verify for 127.0.0.1 against the CA: %v", err)
	}
	tokens, err := os.ReadFile(creds.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(tokens), creds.Token+",") || !strings.Contains(string(tokens), "system:masters") || len(creds.Token) < 32 {
		t.Fatalf("token file %q does not grant the %d-character token system:masters", tokens, len(creds.Token))
	}
	info, err := os.Stat(creds.ServingKeyFile)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v), want 0600", info.Mode().Perm(), err)
	}
}
