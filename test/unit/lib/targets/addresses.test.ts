import { expect, test } from 'vitest';
import {
  addressKindOf,
  addressRefusal,
  isLinkLocalAddress,
  literalAddressOf,
  LOCAL_TARGET_ADDRESSES,
  urlAddressRefusal,
  type TargetAddressPolicy,
} from '../../../../lib/targets/addresses.js';

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

test('the metadata address carried inside IPv6 in any form is link-local: compatible, translated, NAT64, 6to4 and Teredo', () => {
  for (const address of [
    '::a9fe:a9fe',
    '::169.254.169.254',
    '::ffff:0:a9fe:a9fe',
    '::ffff:0:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b::169.254.169.254',
    '64:ff9b:1:a9fe:a9:fe00::',
    '2002:a9fe:a9fe::1',
    '2001:0:4136:e378:8000:63bf:5601:5601',
  ]) {
    expect(isLinkLocalAddress(address), address).toBe(true);
  }
});

test('loopback and unspecified addresses are the host itself, in every spelling', () => {
  for (const address of ['127.0.0.1', '127.1.2.3', '0.0.0.0', '0.1.2.3', '::1', '::', '[::1]', '::ffff:127.0.0.1', '::127.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::']) {
    expect(addressKindOf(address), address).toBe('loopback');
  }
});

test('private ranges are private, also inside IPv6; public addresses in any form are public', () => {
  for (const address of ['10.0.0.5', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1', 'fd12:3456::1', 'fc00::1', '::ffff:10.0.0.5', '64:ff9b::a00:5']) {
    expect(addressKindOf(address), address).toBe('private');
  }
  for (const address of ['93.184.216.34', '172.32.0.1', '2606:4700::1111', '::ffff:93.184.216.34', '64:ff9b::5db8:d822']) {
    expect(addressKindOf(address), address).toBe('public');
  }
  expect(addressKindOf('example.com')).toBeUndefined();
});

const DEPLOYED: TargetAddressPolicy = { allowLoopback: false, allowPrivate: true };
const DEPLOYED_PUBLIC_ONLY: TargetAddressPolicy = { allowLoopback: false, allowPrivate: false };

test('a deployed worker refuses loopback, including the Lambda runtime API, and link-local unless the type allows it', () => {
  expect(addressRefusal('127.0.0.1', '127.0.0.1', DEPLOYED, false)).toMatch(/loopback/);
  expect(addressRefusal('0.0.0.0', '0.0.0.0', DEPLOYED, true)).toMatch(/loopback/);
  expect(addressRefusal('::a9fe:a9fe', '::a9fe:a9fe', DEPLOYED, false)).toMatch(/allow_link_local/);
  expect(addressRefusal('::a9fe:a9fe', '::a9fe:a9fe', DEPLOYED, true)).toBeUndefined();
  expect(addressRefusal('10.0.0.5', '10.0.0.5', DEPLOYED, false)).toBeUndefined();
  expect(addressRefusal('93.184.216.34', '93.184.216.34', DEPLOYED, false)).toBeUndefined();
});

test('refusing private addresses refuses them, in any spelling, and names the setting', () => {
  expect(addressRefusal('internal.example', '10.0.0.5', DEPLOYED_PUBLIC_ONLY, false)).toBe(
    'internal.example resolves to the private address 10.0.0.5, which this deployment refuses (HTTP_TARGET_PRIVATE_ADDRESSES=refuse)',
  );
  expect(addressRefusal('::ffff:a00:5', '::ffff:a00:5', DEPLOYED_PUBLIC_ONLY, false)).toMatch(/private/);
  expect(addressRefusal('93.184.216.34', '93.184.216.34', DEPLOYED_PUBLIC_ONLY, false)).toBeUndefined();
});

test('the local runtime allows loopback and private addresses, never link-local unless the type allows it', () => {
  expect(addressRefusal('127.0.0.1', '127.0.0.1', LOCAL_TARGET_ADDRESSES, false)).toBeUndefined();
  expect(addressRefusal('192.168.1.1', '192.168.1.1', LOCAL_TARGET_ADDRESSES, false)).toBeUndefined();
  expect(addressRefusal('169.254.169.254', '169.254.169.254', LOCAL_TARGET_ADDRESSES, false)).toMatch(/allow_link_local/);
});

test('a URL is refused before any lookup for its literal address in any form, or for localhost', () => {
  for (const url of ['http://127.0.0.1:9001/2018-06-01/runtime/invocation/next', 'http://0/', 'http://[::]/', 'http://2130706433/', 'http://localhost:3001/', 'http://api.localhost/']) {
    expect(urlAddressRefusal(new URL(url), DEPLOYED, false), url).toMatch(/loopback/);
  }
  expect(urlAddressRefusal(new URL('http://[::a9fe:a9fe]/latest/meta-data/'), DEPLOYED, false)).toMatch(/link-local/);
  expect(urlAddressRefusal(new URL('http://localhost:3001/'), LOCAL_TARGET_ADDRESSES, false)).toBeUndefined();
  expect(urlAddressRefusal(new URL('https://example.com/'), DEPLOYED_PUBLIC_ONLY, false)).toBeUndefined();
});
