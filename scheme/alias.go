package scheme

import (
	"errors"
	"fmt"
)

// ErrAlias is matched by every refused alias name.
var ErrAlias = errors.New("scheme: bad alias")

// MaxAliasLen bounds alias names.
const MaxAliasLen = 64

// CheckAlias refuses names that could be confused with a spec: an alias is
// 1..64 characters of letters, digits, '_', '-' and '.', starts with a letter,
// contains no ':' and is not a bare kind name.
func CheckAlias(name string) error {
	if name == "" || len(name) > MaxAliasLen {
		return fmt.Errorf("%w: %q must be 1..%d characters", ErrAlias, name, MaxAliasLen)
	}
	if !isLetter(name[0]) {
		return fmt.Errorf("%w: %q must start with a letter", ErrAlias, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '-' && c != '.' {
			return fmt.Errorf("%w: %q may hold only letters, digits, '_', '-' and '.'", ErrAlias, name)
		}
	}
	if _, err := Parse(name); err == nil {
		return fmt.Errorf("%w: %q is a spec, not an alias", ErrAlias, name)
	}
	for _, k := range kindNames {
		if name == k {
			return fmt.Errorf("%w: %q is a scheme kind", ErrAlias, name)
		}
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
