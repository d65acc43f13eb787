package manifest

import "fmt"

func parseCacheMounts(root *object) []CacheMount {
	out := []CacheMount{}
	items, ok := root.list("cache_mounts")
	if !ok {
		return out
	}
	if len(items) > maxCacheMounts {
		root.c.add("cache_mounts", "has %d entries; the limit is %d", len(items), maxCacheMounts)
	}
	names := make(map[string]int)
	for i, raw := range items {
		o := root.c.object(fmt.Sprintf("cache_mounts[%d]", i), raw)
		if o == nil {
			continue
		}
		cm := parseCacheMount(o)
		checkUniqueName(o, cm.Name, i, names, "cache_mounts")
		out = append(out, cm)
	}
	return out
}

func parseCacheMount(o *object) CacheMount {
	o.rejectUnknown("name", "path", "seed")
	cm := CacheMount{Name: parseName(o)}
	if o.require("path", `; the absolute path in the container, for example "/root/.cache/huggingface"`) {
		if p, ok := o.str("path"); ok {
			if err := checkMountPoint(p); err != nil {
				o.c.add(o.at("path"), "%v", err)
			} else {
				cm.Path = p
			}
		}
	}
	if s, ok := o.str("seed"); ok {
		if p, err := cleanProjectPath(s); err != nil {
			o.c.add(o.at("seed"), "%v", err)
		} else {
			cm.Seed = p
		}
	}
	return cm
}
