//! TLS to PostgreSQL with libpq's `sslmode` meanings, against a throwaway server listening on
//! 127.0.0.1 with a certificate for `localhost` signed by a test CA (made here with rcgen):
//! each mode connects or refuses as the `pg_tls` table says, and a connection said to be TLS
//! is TLS in the server's own view (`pg_stat_ssl`).

use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use store::{Location, Store};

use crate::test_server;

/// The test CA's certificate (PEM) and the server's certificate and key, for `localhost`.
fn certificates() -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

fn open(url: &str) -> Result<Store, String> {
    let location = Location::parse(Path::new(url)).map_err(|e| e.to_string())?;
    Store::open_at(&location, true).map_err(|e| e.to_string())
}

/// Whether the server sees scalelab's open connection as TLS.
fn server_sees_tls(server: &test_server::PgServer) -> String {
    server
        .psql(
            "postgres",
            "SELECT string_agg(s.ssl::text, ',') FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'scalelab'",
        )
        .trim()
        .to_string()
}

#[test]
fn each_sslmode_connects_or_refuses_as_libpq_would() {
    let (ca, cert, key) = certificates();
    let server = match test_server::tls_server(&cert, &key) {
        Ok(s) => s,
        Err(reason) => {
            if std::env::var_os("SCALELAB_REQUIRE_PG").is_some() {
                panic!("PostgreSQL is required (SCALELAB_REQUIRE_PG) but: {reason}");
            }
            eprintln!("skipped: no PostgreSQL server for this test: {reason}");
            return;
        }
    };
    let port = server.port.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("root.crt");
    std::fs::write(&ca_file, &ca).unwrap();
    let ca_file = ca_file.display().to_string();
    let url = |host: &str, query: &str| {
        format!("postgres://scalelab_test@{host}:{port}/postgres?{query}")
    };

    // Verified: the CA signed it and it names localhost.
    let store = open(&url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca_file}"),
    ))
    .unwrap();
    assert_eq!(server_sees_tls(&server), "true");
    drop(store);

    // 127.0.0.1 is not the name in the certificate: verify-full refuses, verify-ca does not.
    let err = open(&url(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={ca_file}"),
    ))
    .expect_err("verify-full against another name");
    assert!(err.contains("certificate"), "{err}");
    let store = open(&url(
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={ca_file}"),
    ))
    .unwrap();
    assert_eq!(server_sees_tls(&server), "true");
    drop(store);

    // Not signed by a root this host trusts.
    let err =
        open(&url("localhost", "sslmode=verify-full")).expect_err("verify-full without the CA");
    assert!(err.contains("certificate") || err.contains("root"), "{err}");

    // require without a root file: encrypted, not authenticated; prefer takes TLS when
    // offered; disable speaks plain text to the same server.
    for (query, tls) in [
        ("sslmode=require", "true"),
        ("", "true"),
        ("sslmode=disable", "false"),
    ] {
        let store = open(&url("localhost", query)).unwrap();
        assert_eq!(server_sees_tls(&server), tls, "{query}");
        drop(store);
    }

    // No TLS on a Unix socket, and no `allow`.
    let socket = server.url("postgres");
    let err = open(&format!("{socket}&sslmode=require")).err().unwrap();
    assert!(err.contains("Unix socket"), "{err}");
    let err = open(&url("localhost", "sslmode=allow")).err().unwrap();
    assert!(err.contains("allow"), "{err}");
    let err = open(&url("localhost", "sslmode=verify-everything"))
        .err()
        .unwrap();
    assert!(err.contains("verify-everything"), "{err}");
}
