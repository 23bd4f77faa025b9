//! Apache Kafka from Maven Central: the pinned release's jars, resolved with their
//! dependencies by Maven (checksums verified: `--strict-checksums`) into the machine's
//! tool cache, keyed by version. No tarball download is reachable here, so the broker,
//! its storage tool and the admin and performance tools all run from these jars.

use anyhow::{Context, Result, bail};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The Apache Kafka release the project is pinned to (KRaft only, Java 17+).
pub const KAFKA_VERSION: &str = "4.4.0";
/// The Scala build of the broker jar (`kafka_2.13`).
pub const KAFKA_SCALA_VERSION: &str = "2.13";
/// The lowest Java feature release the broker runs on.
pub const MIN_JAVA: u32 = 17;
/// The log4j2 release whose SLF4J binding routes the broker's logs (the version Kafka
/// 4.4.0 itself depends on).
const LOG4J_VERSION: &str = "2.25.5";
/// Written last by an install: its presence means the jars are complete.
const COMPLETE_MARKER: &str = "complete";

/// An installed Apache Kafka: a directory with `lib/*.jar` and a log4j2 configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KafkaHome {
    dir: PathBuf,
}

impl KafkaHome {
    /// The install directory (`<cache>/kafka-<version>`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The JVM class path of every jar (`<dir>/lib/*`).
    pub fn classpath(&self) -> String {
        format!("{}/*", self.dir.join("lib").display())
    }

    /// The log4j2 configuration: everything at INFO (WARN for the chatty request logger)
    /// to stdout, which the broker's launcher sends to its log file.
    pub fn log4j_config(&self) -> PathBuf {
        self.dir.join("log4j2.properties")
    }

    /// A `java` command with this class path and log configuration, running `main_class`
    /// (a tool: a 512 MiB heap at most, enough for the storage tool, a consumer and the
    /// producer performance tool, small beside the broker on a 2-core machine).
    pub fn java(&self, main_class: &str) -> Command {
        let mut cmd = Command::new("java");
        cmd.arg("-Xmx512m")
            .arg("-cp")
            .arg(self.classpath())
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                self.log4j_config().display()
            ))
            .arg("-Djava.awt.headless=true")
            .arg(main_class);
        cmd
    }
}

/// Runs `cmd` with its output captured. On failure that output goes to `log`, and the
/// error is `failed` with the exit status and the log's path (a setup step's whole
/// output is too long for an error line and too useful to drop).
pub(crate) fn run_logged(cmd: &mut Command, log: &Path, failed: &str) -> Result<()> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd.output().with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        let _ = fs::write(log, [out.stdout.as_slice(), out.stderr.as_slice()].concat());
        bail!(
            "{failed} ({}); its output is in {}",
            out.status,
            log.display()
        );
    }
    Ok(())
}

/// `<cache>/kafka-<version>`.
pub fn kafka_dir() -> PathBuf {
    crate::cache_dir().join(format!("kafka-{KAFKA_VERSION}"))
}

/// The installed Kafka, if its install completed.
pub fn kafka_installed() -> Option<KafkaHome> {
    let dir = kafka_dir();
    dir.join(COMPLETE_MARKER)
        .is_file()
        .then_some(KafkaHome { dir })
}

/// The feature release of the `java` on PATH (17 for `17.0.15`), or a one-line error
/// naming what to install.
pub fn java_feature_version() -> Result<u32> {
    let out = Command::new("java")
        .arg("-version")
        .stdin(Stdio::null())
        .output();
    let out = match out {
        Ok(out) if out.status.success() => out,
        _ => bail!(
            "Apache Kafka needs Java {MIN_JAVA} or later and no `java` runs on PATH \
             (install one: apt-get install openjdk-17-jre-headless)"
        ),
    };
    // `openjdk version "17.0.15" 2025-04-15` on stderr; "1.8.0_x" for Java 8.
    let text = String::from_utf8_lossy(&out.stderr);
    let quoted = text.split('"').nth(1).unwrap_or_default();
    let mut parts = quoted.split(['.', '_', '-', '+']);
    let first: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let feature = if first == 1 {
        parts.next().and_then(|p| p.parse().ok()).unwrap_or(0)
    } else {
        first
    };
    if feature < MIN_JAVA {
        bail!(
            "Apache Kafka needs Java {MIN_JAVA} or later; the `java` on PATH is {quoted:?} \
             (install a newer one: apt-get install openjdk-17-jre-headless)"
        );
    }
    Ok(feature)
}

fn require_maven() -> Result<()> {
    let ok = Command::new("mvn")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        bail!(
            "fetching Apache Kafka {KAFKA_VERSION} from Maven Central needs Maven and no `mvn` \
             runs on PATH (install it: apt-get install maven)"
        );
    }
    Ok(())
}

/// The pom Maven resolves: the broker, the tools (storage, admin, console consumer,
/// producer performance) and the log binding, all at pinned versions.
fn pom() -> String {
    let dep = |group: &str, artifact: &str, version: &str| {
        format!(
            "    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>\
             <version>{version}</version></dependency>\n"
        )
    };
    format!(
        "<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  \
         <modelVersion>4.0.0</modelVersion>\n  <groupId>local.outbox-dev</groupId>\n  \
         <artifactId>kafka-broker</artifactId>\n  <version>{KAFKA_VERSION}</version>\n  \
         <packaging>pom</packaging>\n  <dependencies>\n{}{}{}  </dependencies>\n</project>\n",
        dep(
            "org.apache.kafka",
            &format!("kafka_{KAFKA_SCALA_VERSION}"),
            KAFKA_VERSION
        ),
        dep("org.apache.kafka", "kafka-tools", KAFKA_VERSION),
        dep(
            "org.apache.logging.log4j",
            "log4j-slf4j-impl",
            LOG4J_VERSION
        ),
    )
}

const LOG4J_CONFIG: &str = "\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.tools.name = org.apache.kafka.tools
logger.tools.level = WARN
";

/// Installs the pinned Kafka into the cache unless it is complete there, and returns it.
/// Idempotent; a broken earlier attempt is redone. Needs Java 17+ and Maven; either
/// missing is a one-line error naming the package to install.
pub fn ensure_kafka_installed() -> Result<KafkaHome> {
    java_feature_version()?;
    if let Some(home) = kafka_installed() {
        return Ok(home);
    }
    require_maven()?;
    let dir = kafka_dir();
    let started = Instant::now();
    eprintln!(
        "xtask: fetching Apache Kafka {KAFKA_VERSION} and its dependencies from Maven Central \
         into {} (first run only)",
        dir.display()
    );
    let lib = dir.join("lib");
    let _ = fs::remove_dir_all(&lib);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::write(dir.join("pom.xml"), pom()).context("writing the pom")?;
    let mut mvn = Command::new("mvn");
    mvn.args(["--batch-mode", "--quiet", "--strict-checksums"])
        .arg(format!("-Dmaven.repo.local={}", dir.join("m2").display()))
        .arg("-f")
        .arg(dir.join("pom.xml"))
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", lib.display()))
        .arg("-DincludeScope=runtime")
        .stdin(Stdio::null());
    run_logged(
        &mut mvn,
        &dir.join("mvn.log"),
        &format!("Maven could not fetch Apache Kafka {KAFKA_VERSION}"),
    )?;
    let jars = fs::read_dir(&lib)
        .with_context(|| format!("listing {}", lib.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jar"))
        .count();
    let broker_jar = lib.join(format!("kafka_{KAFKA_SCALA_VERSION}-{KAFKA_VERSION}.jar"));
    if !broker_jar.is_file() {
        bail!("Maven finished but {} is missing", broker_jar.display());
    }
    fs::write(dir.join("log4j2.properties"), LOG4J_CONFIG).context("writing log4j2.properties")?;
    fs::write(dir.join(COMPLETE_MARKER), format!("{jars} jars\n"))
        .context("writing the install marker")?;
    eprintln!(
        "xtask: Apache Kafka {KAFKA_VERSION}: {jars} jars in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(KafkaHome { dir })
}

#[cfg(test)]
#[path = "kafka_install_tests.rs"]
mod tests;
