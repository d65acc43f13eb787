package manifest

func parseBuild(root *object) Build {
	b := Build{Dockerfile: DefaultDockerfile, Context: DefaultContext}
	o := root.sub("build")
	if o == nil {
		return b
	}
	o.rejectUnknown("dockerfile", "context", "target", "args", "inputs")

	if s, ok := o.str("dockerfile"); ok {
		switch p, err := cleanProjectPath(s); {
		case err != nil:
			o.c.add("build.dockerfile", "%v", err)
		case p == ".":
			o.c.add("build.dockerfile", "must name a file, such as %q", DefaultDockerfile)
		default:
			b.Dockerfile = p
		}
	}
	if s, ok := o.str("context"); ok {
		if p, err := cleanProjectPath(s); err != nil {
			o.c.add("build.context", "%v", err)
		} else {
			b.Context = p
		}
	}
	if s, ok := o.str("target"); ok {
		if !stagePattern.MatchString(s) {
			o.c.add("build.target", "%q is not a valid build stage name (the name after AS in a FROM line)", s)
		}
		b.Target = s
	}

	args, keys, _ := o.stringMap("args")
	if len(keys) > maxBuildArgs {
		o.c.add("build.args", "has %d arguments; the limit is %d", len(keys), maxBuildArgs)
	}
	for _, k := range keys {
		if !envNamePattern.MatchString(k) {
			o.c.add("build.args."+k, "is not a valid build argument name: use letters, digits and '_', not starting with a digit")
		}
		if err := checkValue(args[k]); err != nil {
			o.c.add("build.args."+k, "%v", err)
		}
	}
	b.Args = args

	if inputs, ok := o.strings("inputs"); ok {
		b.Inputs = pathList(o.c, "build.inputs", inputs, maxBuildInputs, cleanProjectPath)
	}
	return b
}
