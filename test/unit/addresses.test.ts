import { expect, test } from 'vitest';
import { isLinkLocalAddress, literalAddressOf } from '../../lib/targets/addresses.js';

test('the metadata service and all of 169.254.0.0/16 are link-local', () => {
  for (const address of ['169.254.169.254', '169.254.0.1', '169.254.255.255', '169.254.170.2']) {
    expect(isLinkLocalAddress(address)).toBe(true);
  }
});

test('the IPv6 metadata address, fe80::/10, and IPv4-mapped metadata addresses are link-local', () => {
  for (const address of ['fd00:ec2::254', 'fe80::1', '[fe80::1%eth0]', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe']) {
    expect(isLinkLocalAddress(address)).toBe(true);
  }
});

test('loopback, private and public addresses are not link-local', () => {
  for (const address of ['127.0.0.1', '10.0.0.5', '192.168.1.1', '169.253.255.255', '169.255.0.1', '::1', 'fd00:ec2::253', '93.184.216.34']) {
    expect(isLinkLocalAddress(address)).toBe(false);
  }
});

test('an IP literal in a URL is found whatever its form; a host name is not a literal', () => {
  expect(literalAddressOf(new URL('http://169.254.169.254/latest'))).toBe('169.254.169.254');
  expect(literalAddressOf(new URL('http://[fd00:ec2::254]/'))).toBe('fd00:ec2::254');
  // The URL parser normalises decimal and hex forms to dotted quads.
  expect(literalAddressOf(new URL('http://2852039166/'))).toBe('169.254.169.254');
  expect(literalAddressOf(new URL('http://0xa9.0xfe.0xa9.0xfe/'))).toBe('169.254.169.254');
  expect(literalAddressOf(new URL('https://example.com/'))).toBeUndefined();
});
