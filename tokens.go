package mql

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// ErrUnauthorized is returned by Authenticate for a token that is malformed, unknown, expired
// or revoked. It says nothing more, on purpose.
var ErrUnauthorized = errors.New("unauthorized")

// tokenPrefix starts every token, so that one found in a log or a file is recognisable.
const tokenPrefix = "mql_"

// TokenSpec issues a bearer token for `mql serve`: requests that carry it are served as
// Principal. By must be the owner.
type TokenSpec struct {
	Principal string
	By        string
	// Expires is when the token stops working; zero for never.
	Expires time.Time
}

// Token describes an issued token. The secret is never stored: only its SHA-256 is, so
// neither the store nor its export holds a usable token.
type Token struct {
	ID        string     `json:"id"`
	Principal string     `json:"principal"`
	By        string     `json:"created_by"`
	Created   time.Time  `json:"created"`
	Expires   time.Time  `json:"expires,omitzero"`
	Revoked   *time.Time `json:"revoked,omitempty"`
	RevokedBy string     `json:"revoked_by,omitempty"`
	Tx        int64      `json:"tx"`
}

// CreateToken records a new token for s.Principal and returns it whole, once: the store keeps
// only a hash of its secret. The token has 256 random bits from crypto/rand.
func (db *DB) CreateToken(ctx context.Context, s TokenSpec) (string, Token, error) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", Token{}, fmt.Errorf("no randomness for a token: %w", err)
	}
	enc := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secret[:]))
	sum := sha256.Sum256([]byte(enc))
	var id string
	rc, err := db.write(ctx, s.By, func(v *index.View, tx *record.Tx, rc *Receipt) error {
		if s.By != v.Meta().Owner {
			return fmt.Errorf("token for %s: %w: only the owner (%s) issues tokens", s.Principal, ErrNoStanding, v.Meta().Owner)
		}
		if err := checkName("principal", s.Principal); err != nil {
			return err
		}
		if v.Principal(s.Principal) == nil {
			return unknownPrincipal(s.Principal)
		}
		if !s.Expires.IsZero() && !s.Expires.After(tx.Time) {
			return fmt.Errorf("token for %s: %w: it would expire at %s, before it is issued", s.Principal, ErrInvalid, s.Expires.UTC().Format(time.RFC3339))
		}
		id = recordID("t", tx, len(tx.Tokens)+1)
		tx.Tokens = append(tx.Tokens, &record.Token{ID: id, Principal: s.Principal, Hash: hex.EncodeToString(sum[:]), By: s.By, Expires: utc(s.Expires), Tx: tx.ID})
		rc.Ref = id
		return nil
	})
	if err != nil {
		return "", Token{}, err
	}
	tok := Token{ID: id, Principal: s.Principal, By: s.By, Created: rc.At, Expires: utc(s.Expires), Tx: rc.Tx}
	return tokenPrefix + id + "_" + enc, tok, nil
}

// Tokens lists every token issued, with its state; only the owner sees them.
func (r reads) Tokens(ctx context.Context) ([]Token, error) {
	out := []Token{}
	err := r.view(ctx, func(v *index.View) error {
		for _, k := range v.Tokens() {
			_, rev := v.Token(k.ID)
			t := Token{ID: k.ID, Principal: k.Principal, By: k.By, Created: v.TxTime(k.Tx), Expires: k.Expires, Tx: int64(k.Tx)}
			if rev != nil {
				at := v.TxTime(rev.Tx)
				t.Revoked, t.RevokedBy = &at, rev.By
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// RevokeToken ends a token from now on: a request that carries it, even on a connection
// opened before, is refused from its next request. By must be the owner.
func (db *DB) RevokeToken(ctx context.Context, id, by string) (Receipt, error) {
	return db.write(ctx, by, func(v *index.View, tx *record.Tx, rc *Receipt) error {
		if by != v.Meta().Owner {
			return fmt.Errorf("revoke token %s: %w: only the owner (%s) revokes tokens", id, ErrNoStanding, v.Meta().Owner)
		}
		k, rev := v.Token(id)
		if k == nil {
			return fmt.Errorf("token %q: %w: `mql token list` shows the tokens", id, ErrNotFound)
		}
		if rev != nil {
			return fmt.Errorf("token %s: %w: already revoked by %s in tx %d", id, ErrConflict, rev.By, rev.Tx)
		}
		tx.TokenRevocations = append(tx.TokenRevocations, &record.TokenRevocation{ID: recordID("k", tx, len(tx.TokenRevocations)+1), Token: id, By: by, Tx: tx.ID})
		rc.Ref = id
		return nil
	})
}

// Authenticate returns the principal a bearer token was issued to, if the token is valid now:
// known, not expired, not revoked, and its principal still recorded. A token that fails any of
// these is ErrUnauthorized, with no detail; a store that cannot be read to tell returns its own
// error (ErrStorage), which is no answer about the token. The secret is compared in constant
// time.
func (db *DB) Authenticate(ctx context.Context, token string) (string, error) {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok || len(token) > 256 {
		return "", ErrUnauthorized
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 {
		return "", ErrUnauthorized
	}
	id, secret := rest[:i], rest[i+1:]
	sum := sha256.Sum256([]byte(secret))
	principal := ""
	err := db.Reader().view(ctx, func(v *index.View) error {
		k, rev := v.Token(id)
		if k == nil {
			// Compare anyway, so that an unknown id costs what a known one does.
			subtle.ConstantTimeCompare(sum[:], make([]byte, len(sum)))
			return ErrUnauthorized
		}
		want, err := hex.DecodeString(k.Hash)
		if err != nil || subtle.ConstantTimeCompare(sum[:], want) != 1 {
			return ErrUnauthorized
		}
		if rev != nil || (!k.Expires.IsZero() && !v.Now().Before(k.Expires)) || v.Principal(k.Principal) == nil {
			return ErrUnauthorized
		}
		principal = k.Principal
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrUnauthorized) {
			return "", ErrUnauthorized
		}
		return "", err
	}
	return principal, nil
}
