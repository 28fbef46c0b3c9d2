package token

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hcp-edge/device/catalog"
	"hcp-edge/internal/wallclock"
)

// Algorithm is the only JWT "alg" the package signs and accepts.
const Algorithm = "EdDSA"

// MaxTokenBytes bounds the length of a token Verify parses.
const MaxTokenBytes = 8 << 10

// Claims are the claims of a session token. The registered claims (iss,
// aud, sub, jti, iat, nbf, exp) are set by Issue; sub is the session id.
type Claims struct {
	SessionID          string               `json:"sid"`
	CallerID           string               `json:"caller_id"`
	Capability         string               `json:"capability"`
	CapabilityVersion  string               `json:"capability_version"`
	RiskLevel          string               `json:"risk_level"`          // approved, R1–R5
	DataClassification string               `json:"data_classification"` // approved, T1–T4
	EnvelopeDigest     string               `json:"envelope_digest"`     // EnvelopeDigest of the running envelope
	Permissions        []catalog.Permission `json:"permissions"`         // catalog permissions the session may use
	jwt.RegisteredClaims
}

// Has reports whether the claims grant permission p.
func (c *Claims) Has(p catalog.Permission) bool { return slices.Contains(c.Permissions, p) }

func validLevel(s string, prefix byte) bool {
	return len(s) == 2 && s[0] == prefix && s[1] >= '1' && s[1] <= '5' && !(prefix == 'T' && s[1] == '5')
}

// Validate checks the private claims; jwt calls it after the registered
// claims passed (jwt.ClaimsValidator) and Issue calls it before signing.
func (c *Claims) Validate() error {
	switch {
	case c.SessionID == "":
		return errors.New("no session id")
	case c.Subject != "" && c.Subject != c.SessionID:
		return fmt.Errorf("subject %q is not the session id %q", c.Subject, c.SessionID)
	case c.CallerID == "":
		return errors.New("no caller id")
	case c.Capability == "" || c.CapabilityVersion == "":
		return errors.New("no capability name and version")
	case !validLevel(c.RiskLevel, 'R'):
		return fmt.Errorf("risk level %q is not R1–R5", c.RiskLevel)
	case !validLevel(c.DataClassification, 'T'):
		return fmt.Errorf("data classification %q is not T1–T4", c.DataClassification)
	case c.EnvelopeDigest == "":
		return errors.New("no envelope digest")
	}
	for _, p := range c.Permissions {
		switch p {
		case catalog.PermissionRead, catalog.PermissionMeasure, catalog.PermissionOperate, catalog.PermissionGas:
		default:
			return fmt.Errorf("unknown permission %q", p)
		}
	}
	return nil
}

var _ jwt.ClaimsValidator = (*Claims)(nil)

// Opts tunes an Authority.
type Opts struct {
	Issuer   string        // iss of issued tokens, required on verify
	Audience string        // aud of issued tokens, required on verify
	Leeway   time.Duration // clock skew allowed on exp, nbf and iat
	// Clock is the process clock: its wall time stamps iat, nbf and exp
	// and judges tokens of earlier processes; its monotonic time judges
	// the tokens this Authority issued (see Verify). A clock of its own
	// (wallclock.New) if nil.
	Clock *wallclock.Clock
}

// DefaultOpts returns issuer "hcp-edge", audience "hcp-edge/session", a
// leeway of 5 s and no Clock (New makes one).
func DefaultOpts() Opts {
	return Opts{Issuer: "hcp-edge", Audience: "hcp-edge/session", Leeway: 5 * time.Second}
}

// Authority issues and verifies session tokens with one Ed25519 key.
// It is safe for concurrent use.
type Authority struct {
	priv   ed25519.PrivateKey
	pub    ed25519.PublicKey
	opts   Opts
	parser *jwt.Parser

	mu     sync.Mutex
	issued map[string]issued // jti → issue of a token of this process
}

// issued is when this process issued a token: its iat and the monotonic
// time then, and its lifetime.
type issued struct {
	iat     time.Time
	elapsed time.Duration // Clock.Elapsed at issue
	life    time.Duration // exp − iat
}

// New returns an Authority signing with priv. Empty fields of opts take
// DefaultOpts' values; a negative Leeway is refused.
func New(priv ed25519.PrivateKey, opts Opts) (*Authority, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("token: New: want an Ed25519 private key, have %d bytes", len(priv))
	}
	def := DefaultOpts()
	if opts.Issuer == "" {
		opts.Issuer = def.Issuer
	}
	if opts.Audience == "" {
		opts.Audience = def.Audience
	}
	if opts.Leeway < 0 {
		return nil, fmt.Errorf("token: New: negative leeway %v", opts.Leeway)
	}
	if opts.Leeway == 0 {
		opts.Leeway = def.Leeway
	}
	if opts.Clock == nil {
		opts.Clock = wallclock.New()
	}
	a := &Authority{priv: priv, pub: priv.Public().(ed25519.PublicKey), opts: opts, issued: map[string]issued{}}
	// The signature and the encoding are checked by the parser; the claims,
	// with the time Verify judges them at, by validate.
	a.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{Algorithm}),
		jwt.WithoutClaimsValidation(),
		jwt.WithStrictDecoding(),
	)
	return a, nil
}

// Clock is the Authority's process clock (Opts.Clock).
func (a *Authority) Clock() *wallclock.Clock { return a.opts.Clock }

// validate checks the registered claims (exp required, nbf, iat, issuer,
// audience, with the leeway) and the private claims at the instant now.
func (a *Authority) validate(c *Claims, now time.Time) error {
	return jwt.NewValidator(
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(a.opts.Issuer),
		jwt.WithAudience(a.opts.Audience),
		jwt.WithLeeway(a.opts.Leeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
	).Validate(c)
}

// judgedAt is the instant the time claims of c are judged at: for a token
// this Authority issued, its iat plus the monotonic time since it was
// issued (a step of the wall clock neither expires it nor makes it "not
// yet valid"); for any other token, the wall clock now, or the latest it
// has been (wallclock.Clock.Ceil: a step back never makes an expired token
// of an earlier process valid again).
func (a *Authority) judgedAt(c *Claims) time.Time {
	a.mu.Lock()
	is, ok := a.issued[c.ID]
	a.mu.Unlock()
	if ok && c.IssuedAt != nil && c.IssuedAt.Time.Equal(is.iat) {
		return is.iat.Add(a.opts.Clock.Elapsed() - is.elapsed)
	}
	return a.opts.Clock.Ceil()
}

// PublicKey returns the verification key.
func (a *Authority) PublicKey() ed25519.PublicKey { return a.pub }

// Issue signs a token for c valid from now for ttl (the session's
// max_duration, or less): exp = iat + ttl. It sets the registered claims and
// returns the token and the claims as signed.
func (a *Authority) Issue(c Claims, ttl time.Duration) (string, *Claims, error) {
	if ttl <= 0 {
		return "", nil, fmt.Errorf("token: issue for session %q: lifetime %v is not positive", c.SessionID, ttl)
	}
	var jti [16]byte
	if _, err := rand.Read(jti[:]); err != nil {
		return "", nil, fmt.Errorf("token: issue: %w", err)
	}
	el := a.opts.Clock.Elapsed()
	now := a.opts.Clock.Now().Truncate(time.Second) // NumericDate has second precision
	c.Permissions = slices.Clone(c.Permissions)
	c.RegisteredClaims = jwt.RegisteredClaims{
		Issuer:    a.opts.Issuer,
		Subject:   c.SessionID,
		Audience:  jwt.ClaimStrings{a.opts.Audience},
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		NotBefore: jwt.NewNumericDate(now),
		IssuedAt:  jwt.NewNumericDate(now),
		ID:        hex.EncodeToString(jti[:]),
	}
	if err := c.Validate(); err != nil {
		return "", nil, fmt.Errorf("token: issue for session %q: %w", c.SessionID, err)
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, &c).SignedString(a.priv)
	if err != nil {
		return "", nil, fmt.Errorf("token: sign for session %q: %w", c.SessionID, err)
	}
	a.remember(c.ID, issued{iat: now, elapsed: el, life: ttl}, el)
	return s, &c, nil
}

// remember keeps the issue of token jti for Verify, and forgets the
// tokens whose lifetime and leeway have passed on the monotonic clock
// (elapsed is Clock.Elapsed now): those are refused by the wall clock's
// word and by their own.
func (a *Authority) remember(jti string, is issued, elapsed time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, x := range a.issued {
		if elapsed-x.elapsed > x.life+a.opts.Leeway {
			delete(a.issued, id)
		}
	}
	a.issued[jti] = is
}

// Verify parses tok and checks its signature (EdDSA with this Authority's
// key only), exp (required), nbf, iat, issuer, audience and the private
// claims. A refusal matches ErrInvalid and, where it applies, ErrExpired or
// ErrSignature.
//
// Time: a token this Authority issued (same jti and iat) is judged on the
// monotonic clock — its claims are checked at iat plus the monotonic time
// since it was issued — so a step of the wall clock either way neither
// expires it nor makes it "not yet valid", and it never lives longer than
// its exp − iat (plus the leeway) of real time. A token it did not issue
// (one of an earlier process with the same key) is judged by the wall
// clock at the latest it has been in this process (wallclock.Clock.Ceil):
// a step forward may expire it early, a step back never revives it.
func (a *Authority) Verify(tok string) (*Claims, error) {
	if tok == "" {
		return nil, refuse(ErrInvalid, "no token")
	}
	if len(tok) > MaxTokenBytes {
		return nil, refuse(ErrInvalid, fmt.Sprintf("token of %d bytes, limit %d", len(tok), MaxTokenBytes))
	}
	var c Claims
	_, err := a.parser.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) {
		if _, ok := t.Method.(*jwt.SigningMethodEd25519); !ok {
			return nil, fmt.Errorf("algorithm %v refused", t.Header["alg"])
		}
		return a.pub, nil
	})
	if err == nil {
		if err = a.validate(&c, a.judgedAt(&c)); err != nil {
			err = errors.Join(jwt.ErrTokenInvalidClaims, err)
		}
	}
	switch {
	case err == nil:
		return &c, nil
	case errors.Is(err, jwt.ErrTokenExpired), errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return nil, refuseCause(ErrExpired, err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return nil, refuseCause(ErrSignature, err)
	}
	return nil, refuseCause(ErrInvalid, err)
}
