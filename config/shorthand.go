package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// shorthands are sections that may also be written as a single value,
// which then sets one key of the section: "llm.tools: off" is
// "llm.tools.mode: off", in the file and as RECALL_LLM_TOOLS.
var shorthands = map[string]string{"llm.tools": "llm.tools.mode"}

// shorthandEnv returns the environment variables a key may also be set by
// through a shorthand (RECALL_LLM_TOOLS for llm.tools.mode), after its own.
func shorthandEnv(key string) []string {
	var out []string
	for section, k := range shorthands {
		if k == key {
			out = append(out, envName(section))
		}
	}
	return out
}

// expandShorthands rewrites each shorthand section written as one value in
// the YAML document into its mapping ("tools: off" under llm becomes
// "tools: {mode: off}"), and reports whether it changed anything.
func expandShorthands(doc *yaml.Node) bool {
	if len(doc.Content) == 0 {
		return false
	}
	changed := false
	for section, key := range shorthands {
		path := strings.Split(section, ".")
		leaf := key[strings.LastIndexByte(key, '.')+1:]
		node := doc.Content[0]
		for i, name := range path {
			node = mappingValue(node, name)
			if node == nil {
				break
			}
			if i == len(path)-1 && node.Kind == yaml.ScalarNode && node.Tag != "!!null" {
				value := *node
				*node = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
					{Kind: yaml.ScalarNode, Tag: "!!str", Value: leaf}, &value}}
				changed = true
			}
		}
	}
	return changed
}

// mappingValue returns the value of key in a mapping node (keys compared
// ignoring case, as viper does), or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if strings.EqualFold(m.Content[i].Value, key) {
			return m.Content[i+1]
		}
	}
	return nil
}
