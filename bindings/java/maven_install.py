#!/usr/bin/env python3
"""Installs the Java binding's jar and pom into a local Maven repository, offline, exactly where
`mvn install:install-file -Dfile=JAR -DpomFile=POM` puts them (docs/install.md, "Java and Maven").

    maven_install.py --jar oneflow.jar --pom oneflow-0.1.0.pom [--repo ~/.m2/repository]

`mvn install:install-file` needs maven-install-plugin, which Maven downloads from Maven Central on first
use; on a machine without Central (and with an empty ~/.m2) it cannot run, so this writes the layout of a
local repository itself (Python standard library only):
  REPO/<groupId as path>/<artifactId>/<version>/<artifactId>-<version>.jar and .pom
  REPO/<groupId as path>/<artifactId>/<version>/_remote.repositories   (locally installed, as mvn marks it)
  REPO/<groupId as path>/<artifactId>/maven-metadata-local.xml          (versions, merged with earlier ones)
The coordinates are read from the pom. Prints the installed jar's path.
"""
import argparse
import datetime
import os
import shutil
import sys
import xml.etree.ElementTree as ET

POM_NS = "{http://maven.apache.org/POM/4.0.0}"


def coordinates(pom):
    root = ET.parse(pom).getroot()
    values = {}
    for key in ("groupId", "artifactId", "version", "packaging"):
        node = root.find(POM_NS + key)
        if node is None:
            node = root.find(key)
        values[key] = node.text.strip() if node is not None and node.text else None
    for key in ("groupId", "artifactId", "version"):
        if not values[key]:
            raise ValueError(f"{pom} has no <{key}>")
    if values["packaging"] not in (None, "jar"):
        raise ValueError(f"{pom}: packaging {values['packaging']}, expected jar")
    return values["groupId"], values["artifactId"], values["version"]


def _atomic_copy(src, dst):
    tmp = dst + ".tmp"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def metadata(path, group, artifact, version, stamp):
    """maven-metadata-local.xml listing `version` besides the versions it listed already."""
    versions = []
    if os.path.exists(path):
        try:
            versions = [v.text for v in ET.parse(path).getroot().iter("version") if v.text]
        except ET.ParseError:
            versions = []
    if version not in versions:
        versions.append(version)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<metadata>", f"  <groupId>{group}</groupId>",
             f"  <artifactId>{artifact}</artifactId>", "  <versioning>", f"    <release>{version}</release>",
             "    <versions>", *[f"      <version>{v}</version>" for v in versions], "    </versions>",
             f"    <lastUpdated>{stamp}</lastUpdated>", "  </versioning>", "</metadata>", ""]
    return "\n".join(lines)


def install(jar, pom, repo):
    group, artifact, version = coordinates(pom)
    artifact_dir = os.path.join(repo, *group.split("."), artifact)
    version_dir = os.path.join(artifact_dir, version)
    os.makedirs(version_dir, exist_ok=True)
    base = f"{artifact}-{version}"
    _atomic_copy(jar, os.path.join(version_dir, base + ".jar"))
    _atomic_copy(pom, os.path.join(version_dir, base + ".pom"))
    now = datetime.datetime.now(datetime.timezone.utc)
    # The resolver's record of where each file came from: an empty repository id after ">" means
    # "installed locally", which Maven accepts whatever remote repositories a build declares.
    _write(os.path.join(version_dir, "_remote.repositories"),
           "#NOTE: This is a Maven Resolver internal implementation file, its format can be changed without prior notice.\n"
           f"#{now.strftime('%a %b %d %H:%M:%S UTC %Y')}\n{base}.jar>=\n{base}.pom>=\n")
    meta = os.path.join(artifact_dir, "maven-metadata-local.xml")
    _write(meta, metadata(meta, group, artifact, version, now.strftime("%Y%m%d%H%M%S")))
    return os.path.join(version_dir, base + ".jar")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jar", required=True)
    ap.add_argument("--pom", required=True)
    ap.add_argument("--repo", default=os.path.join(os.path.expanduser("~"), ".m2", "repository"))
    args = ap.parse_args(argv)
    try:
        print(install(args.jar, args.pom, args.repo))
    except (OSError, ValueError, ET.ParseError) as e:
        print(f"maven_install: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
