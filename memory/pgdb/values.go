package pgdb

import (
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// The type OIDs read or written specially.
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidOID         = 26
	oidFloat4      = 700
	oidFloat8      = 701
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidByteaArray  = 1001
	oidInt2Array   = 1005
	oidInt4Array   = 1007
	oidTextArray   = 1009
	oidInt8Array   = 1016
	oidFloat4Array = 1021
	oidFloat8Array = 1022
)

// pgEpoch is PostgreSQL's time zero, where binary timestamps count from.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// encodeArg writes an argument for a parameter of type oid: bytes for
// bytea in binary, everything else as text the server parses into the
// parameter's type. nil (or a nil pointer) is NULL; slices are arrays.
func encodeArg(a any, oid uint32) ([]byte, int16, error) {
	switch v := a.(type) {
	case nil:
		return nil, 0, nil
	case []byte:
		if v == nil {
			return nil, 0, nil
		}
		if oid == oidBytea {
			return v, 1, nil
		}
		return v, 0, nil
	case string:
		if oid == oidBytea {
			return []byte(v), 1, nil
		}
		return []byte(v), 0, nil
	case json.RawMessage:
		if v == nil {
			return nil, 0, nil
		}
		return v, 0, nil
	case driver.Valuer:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return nil, 0, nil
		}
		dv, err := v.Value()
		if err != nil {
			return nil, 0, err
		}
		return encodeArg(dv, oid)
	}
	s, null, err := textOf(a)
	if err != nil || null {
		return nil, 0, err
	}
	return []byte(s), 0, nil
}

// textOf is an argument's text form; null when it is NULL.
func textOf(a any) (s string, null bool, err error) {
	switch v := a.(type) {
	case nil:
		return "", true, nil
	case string:
		return v, false, nil
	case []byte:
		if v == nil {
			return "", true, nil
		}
		return `\x` + hex.EncodeToString(v), false, nil
	case int:
		return strconv.Itoa(v), false, nil
	case int64:
		return strconv.FormatInt(v, 10), false, nil
	case int32:
		return strconv.FormatInt(int64(v), 10), false, nil
	case float64:
		return formatFloat(v, 64), false, nil
	case float32:
		return formatFloat(float64(v), 32), false, nil
	case bool:
		if v {
			return "t", false, nil
		}
		return "f", false, nil
	case time.Time:
		return v.Format("2006-01-02 15:04:05.999999999Z07:00:00"), false, nil
	case []string:
		return arrayText(len(v), v == nil, func(i int) (string, bool, error) { return v[i], false, nil })
	case []int64:
		return arrayText(len(v), v == nil, func(i int) (string, bool, error) { return textOf(v[i]) })
	case []int:
		return arrayText(len(v), v == nil, func(i int) (string, bool, error) { return textOf(v[i]) })
	case []int32:
		return arrayText(len(v), v == nil, func(i int) (string, bool, error) { return textOf(v[i]) })
	case []float32:
		return arrayText(len(v), v == nil, func(i int) (string, bool, error) { return textOf(v[i]) })
	case []float64:
		return arrayText(len(v), v == nil, func(i int) (string, bool, error) { return textOf(v[i]) })
	case []bool:
		return arrayText(len(v), v == nil, func(i int) (string, bool, error) { return textOf(v[i]) })
	case [][]byte:
		return arrayText(len(v), v == nil, func(i int) (string, bool, error) { return textOf(v[i]) })
	case []any:
		return arrayText(len(v), v == nil, func(i int) (string, bool, error) { return textOf(v[i]) })
	case driver.Valuer:
		dv, err := v.Value()
		if err != nil {
			return "", false, err
		}
		return textOf(dv)
	}
	rv := reflect.ValueOf(a)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return "", true, nil
		}
		return textOf(rv.Elem().Interface())
	case reflect.String:
		return rv.String(), false, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), false, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), false, nil
	case reflect.Float32, reflect.Float64:
		return formatFloat(rv.Float(), 64), false, nil
	case reflect.Bool:
		return textOf(rv.Bool())
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return textOf(rv.Bytes())
		}
		return arrayText(rv.Len(), rv.IsNil(), func(i int) (string, bool, error) { return textOf(rv.Index(i).Interface()) })
	}
	return "", false, fmt.Errorf("a %T cannot be sent to PostgreSQL", a)
}

func formatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// arrayText writes a one-dimensional array literal: {"a","b",NULL}.
func arrayText(n int, null bool, elem func(i int) (string, bool, error)) (string, bool, error) {
	if null {
		return "", true, nil
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		s, isNull, err := elem(i)
		if err != nil {
			return "", false, err
		}
		if isNull {
			b.WriteString("NULL")
			continue
		}
		b.WriteByte('"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(s[j])
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), false, nil
}

// parseArray reads a one-dimensional array literal's elements (nil: NULL).
func parseArray(s string) ([]*string, error) {
	if i := strings.Index(s, "={"); i >= 0 && strings.HasPrefix(s, "[") {
		s = s[i+1:] // [0:2]={…}: bounds other than from 1
	}
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, fmt.Errorf("%.40q is not an array", s)
	}
	s = s[1 : len(s)-1]
	var out []*string
	if s == "" {
		return out, nil
	}
	for i := 0; i <= len(s); {
		var b strings.Builder
		quoted := i < len(s) && s[i] == '"'
		if quoted {
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			i++ // the closing quote
		} else {
			for ; i < len(s) && s[i] != ','; i++ {
				if s[i] == '{' {
					return nil, errors.New("arrays of more than one dimension are not supported")
				}
				b.WriteByte(s[i])
			}
		}
		e := b.String()
		if !quoted && strings.EqualFold(e, "NULL") {
			out = append(out, nil)
		} else {
			out = append(out, &e)
		}
		if i < len(s) && s[i] != ',' {
			return nil, fmt.Errorf("%.40q is not an array", s)
		}
		i++
	}
	return out, nil
}

// scanValue stores a column's value in dest.
func scanValue(f field, src []byte, dest any) error {
	if src == nil {
		return scanNull(dest)
	}
	switch d := dest.(type) {
	case *string:
		*d = string(src)
		return nil
	case *[]byte:
		b, err := bytesOf(f, src)
		*d = b
		return err
	case *json.RawMessage:
		*d = append(json.RawMessage(nil), src...)
		return nil
	case *int64:
		n, err := intOf(f, src)
		*d = n
		return err
	case *int:
		n, err := intOf(f, src)
		*d = int(n)
		return err
	case *int32:
		n, err := intOf(f, src)
		if err == nil && (n < math.MinInt32 || n > math.MaxInt32) {
			return fmt.Errorf("%d does not fit an int32", n)
		}
		*d = int32(n)
		return err
	case *float64:
		x, err := strconv.ParseFloat(string(src), 64)
		*d = x
		return err
	case *float32:
		x, err := strconv.ParseFloat(string(src), 32)
		*d = float32(x)
		return err
	case *bool:
		b, err := boolOf(src)
		*d = b
		return err
	case *time.Time:
		t, err := timeOf(f, src)
		*d = t
		return err
	case *any:
		v, err := driverValue(f, src)
		*d = v
		return err
	case *[]string:
		return scanArray(f, src, d, func(s string) (string, error) { return s, nil })
	case *[]int64:
		return scanArray(f, src, d, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
	case *[]int32:
		return scanArray(f, src, d, func(s string) (int32, error) {
			n, err := strconv.ParseInt(s, 10, 32)
			return int32(n), err
		})
	case *[]int:
		return scanArray(f, src, d, func(s string) (int, error) { return strconv.Atoi(s) })
	case *[]float32:
		return scanArray(f, src, d, func(s string) (float32, error) {
			x, err := strconv.ParseFloat(s, 32)
			return float32(x), err
		})
	case *[]float64:
		return scanArray(f, src, d, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	case *[]time.Time:
		return scanArray(f, src, d, func(s string) (time.Time, error) { return timeOf(field{oid: oidTimestamptz}, []byte(s)) })
	case *[][]byte:
		return scanArray(f, src, d, func(s string) ([]byte, error) { return bytesOf(field{oid: oidBytea}, []byte(s)) })
	case sql.Scanner:
		v, err := driverValue(f, src)
		if err != nil {
			return err
		}
		return d.Scan(v)
	}
	rv := reflect.ValueOf(dest)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("cannot scan into a %T", dest)
	}
	e := rv.Elem()
	switch e.Kind() {
	case reflect.Pointer: // **T: allocate the T
		p := reflect.New(e.Type().Elem())
		if err := scanValue(f, src, p.Interface()); err != nil {
			return err
		}
		e.Set(p)
		return nil
	case reflect.String:
		e.SetString(string(src))
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := intOf(f, src)
		if err == nil && e.OverflowInt(n) {
			err = fmt.Errorf("%d does not fit a %s", n, e.Type())
		}
		e.SetInt(n)
		return err
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(string(src), 10, 64)
		if err == nil && e.OverflowUint(n) {
			err = fmt.Errorf("%d does not fit a %s", n, e.Type())
		}
		e.SetUint(n)
		return err
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(string(src), 64)
		e.SetFloat(x)
		return err
	case reflect.Bool:
		b, err := boolOf(src)
		e.SetBool(b)
		return err
	}
	return fmt.Errorf("cannot scan a value of type OID %d into a %T", f.oid, dest)
}

// scanNull stores NULL: a nil pointer, slice, interface or Scanner's NULL;
// an error for a destination that cannot hold it.
func scanNull(dest any) error {
	if s, ok := dest.(sql.Scanner); ok {
		return s.Scan(nil)
	}
	rv := reflect.ValueOf(dest)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("cannot scan into a %T", dest)
	}
	e := rv.Elem()
	switch e.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Interface, reflect.Map:
		e.Set(reflect.Zero(e.Type()))
		return nil
	}
	return fmt.Errorf("cannot scan NULL into a %T", dest)
}

func scanArray[T any](f field, src []byte, dest *[]T, conv func(string) (T, error)) error {
	if f.format == 1 {
		return scanBinaryArray(src, dest)
	}
	elems, err := parseArray(string(src))
	if err != nil {
		return err
	}
	out := make([]T, len(elems))
	for i, e := range elems {
		if e == nil {
			var zero T
			if _, ok := any(zero).([]byte); ok {
				continue // a NULL bytea is a nil []byte
			}
			return fmt.Errorf("cannot scan an array's NULL into a %T", dest)
		}
		if out[i], err = conv(*e); err != nil {
			return err
		}
	}
	*dest = out
	return nil
}

func intOf(f field, src []byte) (int64, error) {
	return strconv.ParseInt(string(src), 10, 64)
}

func boolOf(src []byte) (bool, error) {
	switch string(src) {
	case "t", "true":
		return true, nil
	case "f", "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean", src)
}

// bytesOf reads a bytea (binary, or text in hex) or any other column's
// text.
func bytesOf(f field, src []byte) ([]byte, error) {
	if f.oid == oidBytea && f.format == 0 {
		if len(src) >= 2 && src[0] == '\\' && src[1] == 'x' {
			out := make([]byte, hex.DecodedLen(len(src)-2))
			_, err := hex.Decode(out, src[2:])
			return out, err
		}
		return nil, errors.New("bytea in the escape format is not supported (bytea_output = hex)")
	}
	return append([]byte{}, src...), nil
}

// timeOf reads a timestamp: binary (microseconds since 2000-01-01) or
// PostgreSQL's ISO text.
func timeOf(f field, src []byte) (time.Time, error) {
	if f.format == 1 {
		if len(src) != 8 {
			return time.Time{}, fmt.Errorf("a binary timestamp of %d bytes", len(src))
		}
		us := int64(binary.BigEndian.Uint64(src))
		if us == math.MaxInt64 || us == math.MinInt64 {
			return time.Time{}, errors.New("cannot scan an infinite timestamp into a time.Time")
		}
		t := pgEpoch.Add(time.Duration(us) * time.Microsecond)
		if f.oid == oidTimestamptz {
			return t.Local(), nil
		}
		return t, nil
	}
	s := string(src)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07:00:00", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			if f.oid == oidTimestamptz {
				return t.Local(), nil
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a timestamp", s)
}

// driverValue is a column's value as database/sql's drivers give them.
func driverValue(f field, src []byte) (driver.Value, error) {
	if src == nil {
		return nil, nil
	}
	switch f.oid {
	case oidBool:
		return boolOf(src)
	case oidInt2, oidInt4, oidInt8, oidOID:
		return intOf(f, src)
	case oidFloat4, oidFloat8:
		return strconv.ParseFloat(string(src), 64)
	case oidBytea:
		return bytesOf(f, src)
	case oidTimestamp, oidTimestamptz, oidDate:
		return timeOf(f, src)
	}
	if f.format == 1 {
		return nil, fmt.Errorf("a column of type OID %d is read as binary, not for database/sql", f.oid)
	}
	return string(src), nil
}

// scanBinaryArray reads a one-dimensional array in PostgreSQL's binary
// format: dimensions, a NULL flag and the element type, each dimension's
// length and lower bound, then each element's length (-1: NULL) and bytes.
func scanBinaryArray[T any](src []byte, dest *[]T) error {
	if len(src) < 12 {
		return errors.New("a binary array too short")
	}
	ndim := int32(binary.BigEndian.Uint32(src))
	elemOID := binary.BigEndian.Uint32(src[8:])
	src = src[12:]
	if ndim == 0 {
		*dest = []T{}
		return nil
	}
	if ndim != 1 || len(src) < 8 {
		return errors.New("arrays of more than one dimension are not supported")
	}
	n := int(int32(binary.BigEndian.Uint32(src)))
	src = src[8:]
	if n < 0 || n > len(src)/4 {
		return errors.New("a binary array of an invalid length")
	}
	out := make([]T, n)
	for i := range out {
		if len(src) < 4 {
			return errors.New("a binary array cut short")
		}
		l := int(int32(binary.BigEndian.Uint32(src)))
		src = src[4:]
		if l < 0 {
			if _, ok := any(out[i]).([]byte); ok {
				continue // a NULL bytea is a nil []byte
			}
			return fmt.Errorf("cannot scan an array's NULL into a %T", dest)
		}
		if l > len(src) {
			return errors.New("a binary array cut short")
		}
		if err := binaryElem(elemOID, src[:l], &out[i]); err != nil {
			return err
		}
		src = src[l:]
	}
	*dest = out
	return nil
}

// binaryElem reads one binary array element into dest.
func binaryElem(oid uint32, b []byte, dest any) error {
	var i int64
	var x float64
	isInt, isFloat := false, false
	switch {
	case oid == oidInt2 && len(b) == 2:
		i, isInt = int64(int16(binary.BigEndian.Uint16(b))), true
	case oid == oidInt4 && len(b) == 4:
		i, isInt = int64(int32(binary.BigEndian.Uint32(b))), true
	case oid == oidInt8 && len(b) == 8:
		i, isInt = int64(binary.BigEndian.Uint64(b)), true
	case oid == oidFloat4 && len(b) == 4:
		x, isFloat = float64(math.Float32frombits(binary.BigEndian.Uint32(b))), true
	case oid == oidFloat8 && len(b) == 8:
		x, isFloat = math.Float64frombits(binary.BigEndian.Uint64(b)), true
	}
	switch d := dest.(type) {
	case *int64:
		if isInt {
			*d = i
			return nil
		}
	case *int32:
		if isInt && i >= math.MinInt32 && i <= math.MaxInt32 {
			*d = int32(i)
			return nil
		}
	case *int:
		if isInt {
			*d = int(i)
			return nil
		}
	case *float64:
		if isFloat {
			*d = x
			return nil
		}
	case *float32:
		if isFloat {
			*d = float32(x)
			return nil
		}
	case *string:
		if !isInt && !isFloat && oid != oidBytea && oid != oidBool {
			*d = string(b)
			return nil
		}
	case *[]byte:
		*d = append([]byte{}, b...)
		return nil
	}
	return fmt.Errorf("cannot scan an array element of type OID %d into a %T", oid, dest)
}
