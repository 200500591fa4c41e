package run

import (
	"errors"
	"fmt"
)

// ErrConfig is the cause of every error about a method's settings: a value out of range, a choice that does not
// exist, settings that contradict each other, a starting point of the wrong size. Test with errors.Is.
var ErrConfig = errors.New("invalid setting")

// ConfigError is a method's error for one setting.
type ConfigError struct {
	Method string // e.g. "mgvb"
	Field  string // the Config field at fault, e.g. "Step"
	Detail string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s: %s: %s: %v", e.Method, e.Field, e.Detail, ErrConfig)
}

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// ConfigErrorf returns a *ConfigError for method and field with a formatted detail.
func ConfigErrorf(method, field, format string, args ...any) error {
	return &ConfigError{Method: method, Field: field, Detail: fmt.Sprintf(format, args...)}
}
