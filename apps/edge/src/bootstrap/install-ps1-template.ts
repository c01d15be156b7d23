// The node installer for Windows (PowerShell), with placeholders __IOP_VERSION__, __IOP_ARTIFACT_URL__, __IOP_EDGE__,
// __IOP_EDGE_FINGERPRINT__ (single-quoted PowerShell literals), __IOP_ARTIFACT_SHA256S__ (the artifacts' SHA-256
// lines) and __IOP_VERSION_TEXT__ filled by renderInstallPs1.
export const INSTALL_PS1_TEMPLATE = `# IOP node installer for Windows (PowerShell 5.1 or later), rendered by iop-edge __IOP_VERSION_TEXT__ for this edge.
# Loading it only defines functions; the line \`iop-edge node register\` prints downloads it, checks its SHA-256
# against the value pinned in the line, loads it and calls Start-IopNode in the same PowerShell session, so the
# token never appears in a process's arguments:
#   $b = <bytes of '<public-url>/install.ps1'>; <Get-FileHash of $b is the pinned one>; iex <$b as UTF-8>;
#   Start-IopNode -NodeId ID -Token '...' [-Edge HOST:PORT] [-EdgeFingerprint sha256:HEX] [-ArtifactUrl URL]
#     [-Service] [-NoStart] [-InstallDir DIR]
# Start-IopNode detects the architecture, downloads the matching node artifact from the edge, verifies it
# against the SHA-256 written into this script, installs it under %USERPROFILE%\\.iop, writes the token to a
# file only the current user can read, and starts the node in this window pinned to the edge's key (-Service: a
# scheduled task at logon instead).

$IopVersion = __IOP_VERSION__
$IopDefaultArtifactUrl = __IOP_ARTIFACT_URL__
$IopDefaultEdge = __IOP_EDGE__
# sha256:<hex> of the edge's TLS key; '' = the edge runs without TLS (plaintext, not authenticated).
$IopDefaultEdgeFingerprint = __IOP_EDGE_FINGERPRINT__
# '<sha256>  <artifact file>' per line: the only artifacts this script installs.
$IopArtifactSha256s = __IOP_ARTIFACT_SHA256S__
$IopTaskName = 'IOP Node'

function Get-IopArch {
  # A 32-bit PowerShell on 64-bit Windows reports x86 in PROCESSOR_ARCHITECTURE; the native one is in W6432.
  $native = $env:PROCESSOR_ARCHITEW6432
  if (-not $native) { $native = $env:PROCESSOR_ARCHITECTURE }
  switch ($native) {
    'AMD64' { return 'amd64' }
    'ARM64' { return 'arm64' }
    default { throw "iop-install: unsupported CPU architecture '$native': IOP node artifacts exist for amd64 and arm64" }
  }
}

function Get-IopArtifactName([string]$Arch) {
  return "iop-node-$IopVersion-windows-$Arch.tar.gz"
}

# The SHA-256 a checksum list ('<hex>  <name>' lines) gives a file name, or $null.
function Get-IopExpectedHash([string]$SumsText, [string]$Name) {
  foreach ($line in ($SumsText -split "\`r?\`n")) {
    $parts = $line.Trim() -split '\\s+', 2
    if ($parts.Count -eq 2 -and ($parts[1] -eq $Name -or $parts[1] -eq "*$Name")) { return $parts[0].ToLowerInvariant() }
  }
  return $null
}

function Test-IopChecksum([string]$File, [string]$SumsText, [string]$Name) {
  $expected = Get-IopExpectedHash $SumsText $Name
  if (-not $expected) { throw "iop-install: $Name is not among this edge's artifacts: the edge has no node for this platform" }
  $actual = (Get-FileHash -Algorithm SHA256 -LiteralPath $File).Hash.ToLowerInvariant()
  if ($actual -ne $expected) {
    throw "iop-install: checksum mismatch for \${Name}: expected $expected, got $actual (download corrupted or tampered with)"
  }
}

function Invoke-IopDownload([string]$Url, [string]$Destination) {
  try {
    $ProgressPreference = 'SilentlyContinue'
    Invoke-WebRequest -UseBasicParsing -Uri $Url -OutFile $Destination
  } catch {
    throw "iop-install: download failed: $Url ($($_.Exception.Message))"
  }
}

# Creates the token file readable only by the current user (inheritance removed before the token is written).
function Set-IopTokenFile([string]$Path, [string]$Token) {
  Set-Content -LiteralPath $Path -Value '' -NoNewline
  $acl = New-Object System.Security.AccessControl.FileSecurity
  $acl.SetAccessRuleProtection($true, $false)
  $user = [System.Security.Principal.WindowsIdentity]::GetCurrent().Name
  $rule = New-Object System.Security.AccessControl.FileSystemAccessRule($user, 'FullControl', 'Allow')
  $acl.AddAccessRule($rule)
  Set-Acl -LiteralPath $Path -AclObject $acl
  [System.IO.File]::WriteAllText($Path, $Token + "\`n")
}

# One argument for a Windows command line (scheduled task): always double-quoted, embedded quotes escaped.
function ConvertTo-IopArgument([string]$Value) {
  return '"' + ($Value -replace '(\\\\*)"', '$1$1\\"' -replace '(\\\\+)$', '$1$1') + '"'
}

function Start-IopNode {
  [CmdletBinding()]
  param(
    [Parameter(Mandatory = $true)][string]$NodeId,
    [Parameter(Mandatory = $true)][string]$Token,
    [string]$Edge = $IopDefaultEdge,
    [string]$EdgeFingerprint = $IopDefaultEdgeFingerprint,
    [string]$ArtifactUrl = $IopDefaultArtifactUrl,
    [string]$InstallDir = (Join-Path $env:USERPROFILE '.iop'),
    [switch]$Service,
    [switch]$NoStart
  )
  $ErrorActionPreference = 'Stop'
  if (-not $Edge) { throw 'iop-install: -Edge HOST:PORT is required' }
  if (-not $ArtifactUrl) { throw 'iop-install: -ArtifactUrl is required' }
  if ($EdgeFingerprint -and $EdgeFingerprint -cnotmatch '^sha256:[0-9a-f]{64}$') {
    throw 'iop-install: -EdgeFingerprint must be sha256:<64 lowercase hex digits>'
  }
  if (-not $EdgeFingerprint) {
    Write-Warning "iop-install: no edge fingerprint: the node's link (and its token) will be neither encrypted nor authenticated"
  }
  if ([System.Environment]::OSVersion.Platform -ne 'Win32NT') {
    throw 'iop-install: Start-IopNode is for Windows; on Linux and macOS use the curl | bash line (install.sh)'
  }
  $arch = Get-IopArch
  $name = Get-IopArtifactName $arch
  $base = $ArtifactUrl.TrimEnd('/')
  Write-Host "iop-install: node $NodeId on windows-$arch; edge $Edge; installing $name into $InstallDir"

  New-Item -ItemType Directory -Force -Path $InstallDir | Out-Null
  $temp = Join-Path $InstallDir ('.download-' + [System.Guid]::NewGuid().ToString('N'))
  New-Item -ItemType Directory -Force -Path $temp | Out-Null
  try {
    $archive = Join-Path $temp $name
    Invoke-IopDownload "$base/$name" $archive
    Test-IopChecksum $archive $IopArtifactSha256s $name
    Write-Host 'iop-install: SHA-256 verified'
    $versions = Join-Path $InstallDir 'versions'
    New-Item -ItemType Directory -Force -Path $versions | Out-Null
    $folder = $name -replace '\\.tar\\.gz$', ''
    $target = Join-Path $versions $folder
    if (Test-Path -LiteralPath $target) { Remove-Item -Recurse -Force -LiteralPath $target }
    # tar.exe ships with Windows 10 1803 and later.
    if (-not (Get-Command tar.exe -ErrorAction SilentlyContinue)) { throw 'iop-install: tar.exe not found (Windows 10 1803 or later needed)' }
    & tar.exe -xzf $archive -C $versions
    if ($LASTEXITCODE -ne 0) { throw "iop-install: extracting $name failed (tar exit $LASTEXITCODE)" }
  } finally {
    Remove-Item -Recurse -Force -LiteralPath $temp -ErrorAction SilentlyContinue
  }

  $nodeExe = Join-Path $target 'runtime\\node.exe'
  $bundle = Join-Path $target 'lib\\iop-node.cjs'
  if (-not (Test-Path -LiteralPath $nodeExe)) { throw "iop-install: the artifact does not contain $folder\\runtime\\node.exe" }
  # A stable command for later use: %USERPROFILE%\\.iop\\bin\\iop-node.cmd runs the version installed last.
  $binDir = Join-Path $InstallDir 'bin'
  New-Item -ItemType Directory -Force -Path $binDir | Out-Null
  Set-Content -LiteralPath (Join-Path $binDir 'iop-node.cmd') -Encoding ASCII -Value @(
    '@echo off',
    ('call "' + (Join-Path $target 'bin\\iop-node.cmd') + '" %*')
  )
  $tokenFile = Join-Path $InstallDir 'node.token'
  $dataDir = Join-Path $InstallDir 'node'
  Set-IopTokenFile $tokenFile $Token
  New-Item -ItemType Directory -Force -Path $dataDir | Out-Null
  Write-Host "iop-install: installed $target; token in $tokenFile (current user only)"

  $arguments = @('--disable-warning=ExperimentalWarning', $bundle, 'run', '--edge', $Edge, '--node-id', $NodeId, '--token-file', $tokenFile, '--data-dir', $dataDir)
  if ($EdgeFingerprint) { $arguments += @('--edge-fingerprint', $EdgeFingerprint) }
  if ($Service) {
    # A node replaced by another process with its identity exits 0 here, so the task's restart settings
    # never start it into a replace loop.
    $arguments += @('--replaced-exit-code', '0')
    $argumentLine = ($arguments | ForEach-Object { ConvertTo-IopArgument $_ }) -join ' '
    $action = New-ScheduledTaskAction -Execute $nodeExe -Argument $argumentLine -WorkingDirectory $InstallDir
    $trigger = New-ScheduledTaskTrigger -AtLogOn -User ([System.Security.Principal.WindowsIdentity]::GetCurrent().Name)
    $settings = New-ScheduledTaskSettingsSet -RestartCount 10 -RestartInterval (New-TimeSpan -Minutes 1) -ExecutionTimeLimit ([TimeSpan]::Zero)
    Register-ScheduledTask -TaskName $IopTaskName -Action $action -Trigger $trigger -Settings $settings -Force | Out-Null
    Start-ScheduledTask -TaskName $IopTaskName
    Write-Host "iop-install: scheduled task '$IopTaskName' registered (runs at logon) and started"
  } elseif (-not $NoStart) {
    Write-Host 'iop-install: starting the node in this window (Ctrl-C stops it; -Service installs a scheduled task instead)'
    Remove-Item Env:IOP_NODE_TOKEN -ErrorAction SilentlyContinue
    & $nodeExe @arguments
  } else {
    Write-Host "iop-install: start it with: & '$nodeExe' $($arguments -join ' ')"
  }
}
`;
