package art

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

// TestLaunchArguments checks, without a GPU, every g.launch call of the
// GPU engine against its kernel's signature in art.cu: the number of
// arguments, and for each whether it is a pointer, a 64-bit or a 32-bit
// scalar (Go code passes scalars as explicit uint64(...), uint32(...) or
// int32(...) conversions; anything else is a device pointer). A mismatch
// would pass garbage to a kernel that only a GPU run would reveal.
func TestLaunchArguments(t *testing.T) {
	sigs := kernelSignatures(t)
	fields := kernelFields()
	files, err := filepath.Glob("*_gpu.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	calls := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "launch" {
				return true
			}
			if len(call.Args) < 2 {
				return true
			}
			ksel, ok := call.Args[0].(*ast.SelectorExpr)
			if !ok {
				t.Errorf("%s: launch of %T, not a kernel field", fset.Position(call.Pos()), call.Args[0])
				return true
			}
			kname, ok := fields[ksel.Sel.Name]
			if !ok {
				t.Errorf("%s: unknown kernel field %s", fset.Position(call.Pos()), ksel.Sel.Name)
				return true
			}
			params, ok := sigs[kname]
			if !ok {
				t.Errorf("%s: kernel %s not in art.cu", fset.Position(call.Pos()), kname)
				return true
			}
			args := call.Args[2:]
			calls++
			if len(args) != len(params) {
				t.Errorf("%s: %s takes %d arguments, given %d", fset.Position(call.Pos()), kname, len(params), len(args))
				return true
			}
			for i, a := range args {
				if got := argClass(a); got != params[i] {
					t.Errorf("%s: %s argument %d: a %s passed for a %s", fset.Position(a.Pos()), kname, i, got, params[i])
				}
			}
			return true
		})
	}
	if calls < 40 {
		t.Fatalf("found only %d launches", calls)
	}
}

// kernelFields maps each kernelSet field to its kernel's name.
func kernelFields() map[string]string {
	var ks kernelSet
	byAddr := map[**gpu.Function]string{}
	for name, p := range ks.names() {
		byAddr[p] = name
	}
	v := reflect.ValueOf(&ks).Elem()
	out := map[string]string{}
	for i := range v.NumField() {
		out[v.Type().Field(i).Name] = byAddr[(**gpu.Function)(unsafe.Pointer(v.Field(i).UnsafeAddr()))]
	}
	return out
}

// kernelSignatures parses the extern "C" kernels of art.cu and its parts
// (every .cu file of the package) into their parameter classes.
func kernelSignatures(t *testing.T) map[string][]string {
	files, err := filepath.Glob("*.cu")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .cu files: %v", err)
	}
	var src []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	re := regexp.MustCompile(`extern "C" __global__ void (?:__launch_bounds__\([^)]*\)\s*)?(\w+)\(([^)]*)\)`)
	out := map[string][]string{}
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		var ps []string
		for _, p := range strings.Split(m[2], ",") {
			p = strings.TrimSpace(p)
			switch {
			case strings.Contains(p, "*"):
				ps = append(ps, "pointer")
			case strings.HasPrefix(p, "u64 "):
				ps = append(ps, "64-bit scalar")
			case strings.HasPrefix(p, "u32 "), strings.HasPrefix(p, "int "):
				ps = append(ps, "32-bit scalar")
			default:
				t.Fatalf("kernel %s: parameter %q of unknown class", m[1], p)
			}
		}
		out[m[1]] = ps
	}
	return out
}

// argClass classifies a Go launch argument.
func argClass(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok && id.Name == "nil" {
		return "nil (use nullPtr)"
	}
	if c, ok := e.(*ast.CallExpr); ok {
		if id, ok := c.Fun.(*ast.Ident); ok {
			switch id.Name {
			case "uint64":
				return "64-bit scalar"
			case "uint32", "int32":
				return "32-bit scalar"
			}
		}
	}
	return "pointer"
}
